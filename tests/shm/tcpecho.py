"""tcpecho: both directions of one TCP connection at once, checked by hashes (tests/shm_tcp_test.go).

  tcpecho.py server PORT      accepts one connection, echoes everything until EOF, shuts down
                              its write side, prints "server echoed N"
  tcpecho.py client PORT N    sends N pseudo-random bytes from one thread while another reads the
                              echo; shuts down its write side after the last byte; prints
                              "client sent N got M same|differ"
"""
import hashlib
import random
import socket
import sys
import threading


def server(port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1)
    print("listening", flush=True)
    c, _ = ls.accept()
    n = 0
    while True:
        b = c.recv(65536)
        if not b:
            break
        c.sendall(b)
        n += len(b)
    c.shutdown(socket.SHUT_WR)
    c.close()
    print("server echoed", n, flush=True)


def client(port, total):
    c = socket.create_connection(("127.0.0.1", port))
    rnd = random.Random(7)
    sent = hashlib.sha256()
    got = hashlib.sha256()
    count = [0]

    def reader():
        while True:
            b = c.recv(65536)
            if not b:
                return
            got.update(b)
            count[0] += len(b)

    t = threading.Thread(target=reader)
    t.start()
    left = total
    while left > 0:
        n = min(left, rnd.randint(1, 200000))
        b = rnd.randbytes(n)
        sent.update(b)
        c.sendall(b)
        left -= n
    c.shutdown(socket.SHUT_WR)
    t.join(60)
    same = "same" if sent.digest() == got.digest() and count[0] == total else "differ"
    print("client sent", total, "got", count[0], same, flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "server":
        server(int(sys.argv[2]))
    else:
        client(int(sys.argv[2]), int(sys.argv[3]))

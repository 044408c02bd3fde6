"""manyconns: thousands of TCP connections open at once through one process (tests/shm_tcp_test.go).

  manyconns.py server PORT N   accepts N connections (epoll), echoes what each sends; after the
                               clients closed them all, prints "server fds BEFORE AFTER" (open fds
                               before the first accept and after the last close) and exits
  manyconns.py client PORT N   opens N connections, keeps them all open, sends 16 bytes on each
                               and reads each echo back, twice, prints "client ok N" (or
                               "client bad N" with the number of good ones),
                               waits for a line on stdin, then closes them all
"""
import os
import resource
import selectors
import socket
import sys


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(max(soft, n + 200), hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def nfds():
    return len(os.listdir("/proc/self/fd"))


def server(port, n):
    raise_nofile(n)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(4096)
    sel = selectors.DefaultSelector()
    sel.register(ls, selectors.EVENT_READ, None)
    before = nfds()
    print("listening", flush=True)
    accepted = closed = 0
    while closed < n:
        for key, _ in sel.select(timeout=30):
            if key.data is None:
                c, _ = ls.accept()
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ, "conn")
                accepted += 1
                continue
            c = key.fileobj
            try:
                b = c.recv(4096)
            except ConnectionError:
                b = b""
            if b:
                c.sendall(b)
            else:
                sel.unregister(c)
                c.close()
                closed += 1
    sel.unregister(ls)
    print("server fds", before, nfds(), flush=True)


def client(port, n):
    raise_nofile(n)
    conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    bad = 0
    # Two rounds: the first one's bytes may go through the kernel (they are sent before the
    # connection switched to the rings), the second one's through the rings.
    for rnd in range(2):
        for i, c in enumerate(conns):
            c.sendall(b"%08d%08d" % (rnd, i))
        for i, c in enumerate(conns):
            want = b"%08d%08d" % (rnd, i)
            got = b""
            while len(got) < 16:
                b = c.recv(16 - len(got))
                if not b:
                    break
                got += b
            if got != want:
                bad += 1
    print("client ok" if bad == 0 else "client bad", n - bad, flush=True)
    sys.stdin.readline()
    for c in conns:
        c.close()


if __name__ == "__main__":
    mode, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    server(port, n) if mode == "server" else client(port, n)

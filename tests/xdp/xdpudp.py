#!/usr/bin/env python3
"""xdpudp: UDP traffic generator and checker for the AF_XDP transport tests (tests/xdp_test.go).

Every datagram carries a header (magic, sender id, sequence number, payload length, CRC-32 of
the rest) and a payload that is a function of (sender, seq): the receiver recomputes both, so a
damaged, truncated or mixed datagram is counted as bad.

Modes (stdout is line-buffered; the test waits for lines that start with a fixed word); --big N
adds N bytes to every payload (sender and receiver alike):

  rx ADDR:PORT [-n N] [--idle MS] [--group G --ifaddr A] [--mux select|poll|epoll] [--ack W] [--v6only 0|1] [--wait]
      Binds ADDR:PORT (an AF_INET6 socket for an IPv6 address, IPV6_V6ONLY set as given) (joins
      G on the interface of A with --group), prints "ready PORT",
      receives (waiting in the multiplexer first with --mux) until N datagrams or MS
      milliseconds without one (default 3000), acknowledging every W-th datagram of each sender
      to its source with --ack, prints
      "got N bad B dup D reorder R from SRC..." (IPv6 sources as [HOST]:PORT/SCOPE_ID); with
      --meta (IPv6) first "meta hops [H..] tclass [T..] labels L,..." from the ancillary data
      (hop limits and traffic classes seen; per source the number of distinct flow labels). --wait then waits for "exit" on stdin.
  tx ADDR:PORT [-n N] [--flows F] [--id I] [--bind A] [--sport P] [--hops H] [--tclass T] [--ifaddr A] [--noloop] [--ack W | --window W --pause MS] [--wait]
      Sends N datagrams to ADDR:PORT from F sockets (round robin, sender ids I..I+F-1, --id I,
      default 0), each
      bound to A:P (default: unbound: the first sendto binds it), with IPV6_UNICAST_HOPS H and
      IPV6_TCLASS T when given. With --ack W each socket waits
      (at most 2 s) for the receiver's acknowledgement of every W-th datagram it sent, so at
      most W are in flight per sender whatever the scheduler does to the receiver; otherwise it
      pauses MS ms after every W datagrams (default 32 and 3). --ifaddr/--noloop set
      IP_MULTICAST_IF and IP_MULTICAST_LOOP=0. Prints "sent N acks A", then with --wait waits
      for "exit".
  forkrx ADDR:PORT [-n N]
      Binds ADDR:PORT, prints "ready PORT", waits for "go" on stdin (the datagrams are waiting
      by then), forks: the child receives until 1 s without a datagram and prints "child got N
      bad B from SRC...", then the parent does the same and prints "parent got N bad B dup D
      from SRC..." (D: datagrams both got; SRC as rx prints them).
  echo ADDR:PORT [-n N]
      Answers N datagrams to their source, prints "ready PORT" first and "echoed N" last.
  ping ADDR:PORT [-n N] [--wait]
      Sends N datagrams one at a time, each waiting (1 s) for its echo, which must be equal.
      Prints "ping ok N bad B lost L", then with --wait waits for "exit".
"""
import argparse
import select
import socket
import struct
import sys
import time
import zlib

MAGIC = 0x58445054  # "XDPT"
IPV6_FLOWINFO = 11  # linux/in6.h; Python's socket module does not name it
HDR = struct.Struct("!IIIII")  # magic, sender, seq, length, crc


def out(*words):
    print(*words, flush=True)


BIG = 0  # --big: bytes added to every payload (datagrams the path MTU cannot carry whole)


def payload(sender, seq):
    n = 16 + (seq * 7919 + sender * 31) % 1300 + BIG
    pattern = struct.pack("!II", sender, seq) * (n // 8 + 1)
    return pattern[:n]


def datagram(sender, seq):
    body = payload(sender, seq)
    return HDR.pack(MAGIC, sender, seq, len(body), zlib.crc32(body)) + body


def check(data):
    """Returns (sender, seq) of a good datagram, None for a bad one."""
    if len(data) < HDR.size:
        return None
    magic, sender, seq, n, crc = HDR.unpack_from(data)
    body = data[HDR.size:]
    if magic != MAGIC or n != len(body) or zlib.crc32(body) != crc or body != payload(sender, seq):
        return None
    return sender, seq


def addr(s):
    """HOST:PORT or [IPV6]:PORT (a v4-mapped address, a link-local one with %IFNAME) as a
    socket address (IPv6 with the scope id of its %IFNAME)."""
    host, port = s.rsplit(":", 1)
    return sockaddr(host.strip("[]"), int(port))


def sockaddr(host, port):
    if "%" in host:
        return (host, port, 0, socket.if_nametoindex(host.split("%", 1)[1]))
    return (host, port)


def family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def udp_socket(host):
    """A UDP socket of host's family (AF_INET6 for an IPv6 literal, dual-stack as the kernel's
    default makes it)."""
    return socket.socket(family(host), socket.SOCK_DGRAM)


def src_str(src):
    """A source address as recvfrom gave it: IPv4 HOST:PORT, IPv6 [HOST]:PORT/SCOPE (HOST with
    %IFNAME for a link-local one)."""
    if len(src) == 4:
        return "[%s]:%d/%d" % (src[0], src[1], src[3])
    return "%s:%d" % src


def wait_exit():
    for line in sys.stdin:
        if line.strip() == "exit":
            return


def join(sock, group, ifaddr):
    mreq = socket.inet_aton(group) + socket.inet_aton(ifaddr)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)


def waiter(s, mux, timeout):
    """Returns a function that waits until s is readable (False: timeout) with the multiplexer
    mux (select, poll, epoll), or one that lets the blocking receive wait (SO_RCVTIMEO-like
    socket timeout: CPython polls the socket itself)."""
    if mux == "select":
        return lambda: bool(select.select([s], [], [], timeout)[0])
    if mux == "poll":
        p = select.poll()
        p.register(s, select.POLLIN)
        return lambda: bool(p.poll(timeout * 1000))
    if mux == "epoll":
        e = select.epoll()
        e.register(s, select.EPOLLIN)
        return lambda: bool(e.poll(timeout))
    s.settimeout(timeout)
    return lambda: True


def engine_up(s):
    """Under goxio the engine loads at a process's first data call or wait on an inet socket, and
    adopts the sockets made before; a look that takes nothing (select with a zero timeout) makes
    it load now, so that the socket is offloaded before the peer is told "ready"."""
    select.select([s], [], [], 0)


def rx(a):
    s = udp_socket(addr(a.addr)[0])
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if a.v6only is not None:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, a.v6only)
    s.bind(addr(a.addr))
    if a.group:
        join(s, a.group, a.ifaddr)
    engine_up(s)
    out("ready", s.getsockname()[1])
    got = bad = dup = reorder = 0
    seen = set()
    last = {}
    sources = set()
    if a.meta:
        for opt in (socket.IPV6_RECVHOPLIMIT, socket.IPV6_RECVTCLASS, IPV6_FLOWINFO):
            s.setsockopt(socket.IPPROTO_IPV6, opt, 1)
    hops, tclasses, labels = set(), set(), {}
    wait = waiter(s, a.mux, a.idle / 1000)
    while a.n == 0 or got + bad + dup < a.n:
        try:
            if not wait():
                break
            if a.meta:
                data, anc, _, src = s.recvmsg(65536, 256)
            else:
                (data, src), anc = s.recvfrom(65536), []
        except socket.timeout:
            break
        for level, typ, val in anc:
            if level != socket.IPPROTO_IPV6:
                continue
            if typ == socket.IPV6_HOPLIMIT:
                hops.add(struct.unpack("i", val[:4])[0])
            elif typ == socket.IPV6_TCLASS:
                tclasses.add(struct.unpack("i", val[:4])[0])
            elif typ == IPV6_FLOWINFO:
                labels.setdefault(src_str(src), set()).add(struct.unpack("!I", val[:4])[0] & 0xfffff)
        sources.add(src_str(src))
        r = check(data)
        if r is None:
            bad += 1
            continue
        if r in seen:
            dup += 1
            continue
        seen.add(r)
        sender, seq = r
        if seq < last.get(sender, -1):
            reorder += 1
        last[sender] = seq
        got += 1
        if a.ack and (seq + 1) % a.ack == 0:
            s.sendto(struct.pack("!II", sender, seq), src)
    if a.meta:
        # Flow labels: per source, how many distinct ones and whether one is 0 (the kernel
        # labels a flow with one hash of it; labels themselves are keyed per host).
        per = ",".join("%d%s" % (len(v), "+zero" if 0 in v else "") for _, v in sorted(labels.items()))
        out("meta hops", sorted(hops), "tclass", sorted(tclasses), "labels", per)
    out("got", got, "bad", bad, "dup", dup, "reorder", reorder, "from", ",".join(sorted(sources)))
    if a.wait:
        wait_exit()
    s.close()


def tx(a):
    socks = []
    dst = addr(a.addr)
    for _ in range(a.flows):
        s = udp_socket(a.bind or dst[0])
        if a.hops is not None:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, a.hops)
        if a.tclass is not None:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, a.tclass)
        if a.bind or a.sport:
            s.bind(sockaddr(a.bind or ("::" if family(dst[0]) == socket.AF_INET6 else "0.0.0.0"), a.sport))
        if a.ifaddr:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(a.ifaddr))
        if a.noloop:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
        socks.append(s)
    seqs = [0] * a.flows
    acks = 0
    for i in range(a.n):
        f = i % a.flows
        socks[f].sendto(datagram(a.id + f, seqs[f]), dst)
        seqs[f] += 1
        if a.ack:
            if seqs[f] % a.ack == 0 and select.select([socks[f]], [], [], 2.0)[0]:
                socks[f].recv(64)
                acks += 1
        elif a.window and (i + 1) % a.window == 0:
            time.sleep(a.pause / 1000)
    out("sent", a.n, "acks", acks)
    if a.wait:
        wait_exit()
    for s in socks:
        s.close()


def forkrx(a):
    import os
    s = udp_socket(addr(a.addr)[0])
    s.bind(addr(a.addr))
    engine_up(s)
    out("ready", s.getsockname()[1])
    for line in sys.stdin:
        if line.strip() == "go":
            break

    def drain():
        # Non-blocking receives with pauses, no poll: a forked child's poll goes to the kernel,
        # which does not know what was spilled at the fork (the receives take that first).
        got, bad, sources = set(), 0, set()
        s.setblocking(False)
        idle = time.monotonic() + 1.0
        while True:
            try:
                data, src = s.recvfrom(65536)
            except BlockingIOError:
                if time.monotonic() > idle:
                    return got, bad, ",".join(sorted(sources))
                time.sleep(0.01)
                continue
            idle = time.monotonic() + 1.0
            sources.add(src_str(src))
            r = check(data)
            if r is None:
                bad += 1
            else:
                got.add(r)

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        got, bad, src = drain()
        os.write(w, repr(sorted(got)).encode())
        out("child got", len(got), "bad", bad, "from", src)
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    child = set(tuple(x) for x in eval(os.read(r, 1 << 20).decode() or "[]"))
    got, bad, src = drain()
    out("parent got", len(got), "bad", bad, "dup", len(got & child), "from", src)


def echo(a):
    s = udp_socket(addr(a.addr)[0])
    s.bind(addr(a.addr))
    engine_up(s)
    out("ready", s.getsockname()[1])
    n = 0
    while a.n == 0 or n < a.n:
        data, src = s.recvfrom(4096)
        s.sendto(data, src)
        n += 1
    out("echoed", n)


def ping(a):
    dst = addr(a.addr)
    s = udp_socket(dst[0])
    ok = bad = lost = 0
    for seq in range(a.n):
        d = datagram(0, seq)
        s.sendto(d, dst)
        r, _, _ = select.select([s], [], [], 1.0)
        if not r:
            lost += 1
            continue
        data, _ = s.recvfrom(4096)
        if data == d:
            ok += 1
        else:
            bad += 1
    out("ping ok", ok, "bad", bad, "lost", lost)
    if a.wait:
        wait_exit()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["rx", "tx", "forkrx", "echo", "ping"])
    p.add_argument("addr")
    p.add_argument("-n", type=int, default=100)
    p.add_argument("--idle", type=int, default=3000)
    p.add_argument("--group")
    p.add_argument("--ifaddr")
    p.add_argument("--bind")
    p.add_argument("--flows", type=int, default=1)
    p.add_argument("--noloop", action="store_true")
    p.add_argument("--window", type=int, default=32)
    p.add_argument("--pause", type=float, default=3)
    p.add_argument("--wait", action="store_true")
    p.add_argument("--ack", type=int, default=0)
    p.add_argument("--mux", choices=["select", "poll", "epoll"])
    p.add_argument("--sport", type=int, default=0)
    p.add_argument("--big", type=int, default=0)
    p.add_argument("--id", type=int, default=0)
    p.add_argument("--meta", action="store_true")
    p.add_argument("--v6only", type=int)
    p.add_argument("--hops", type=int)
    p.add_argument("--tclass", type=int)
    a = p.parse_args()
    global BIG
    BIG = a.big
    {"rx": rx, "tx": tx, "forkrx": forkrx, "echo": echo, "ping": ping}[a.mode](a)


if __name__ == "__main__":
    main()

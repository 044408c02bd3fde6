"""Python asyncio over IPv6 and dual-stack, as deployed: a server from asyncio.start_server()
without a host (it listens on 0.0.0.0 and on ::), a client that opens a connection to "localhost".

    dualstack.py server PORT      prints "listening", echoes every connection until a line
                                  comes on stdin; holds an AF_INET6 UDP socket on [::1]:PORT
    dualstack.py client HOST PORT N
                                  after a first small round trip, sends N bytes to HOST:PORT
                                  through an echo round trip, prints "client <family> sent N got
                                  N same|differ", then waits for a line on stdin before it closes
                                  the connection
"""
import asyncio
import hashlib
import os
import socket
import sys


async def serve(port):
    async def echo(reader, writer):
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.close()

    srv = await asyncio.start_server(echo, port=port, reuse_address=True)
    # An IPv6 UDP socket too: on shared memory like an IPv4 one.
    udp6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    udp6.bind(("::1", port))
    fams = sorted(socket.AddressFamily(s.family).name for s in srv.sockets)
    print("listening", " ".join(fams), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.readline)
    udp6.close()
    srv.close()


async def client(host, port, n):
    reader, writer = await asyncio.open_connection(host, port)
    fam = socket.AddressFamily(writer.get_extra_info("socket").family).name
    writer.write(b"hello")
    await writer.drain()
    await reader.readexactly(5)
    data = os.urandom(n)

    async def send():
        for i in range(0, n, 32768):
            writer.write(data[i:i + 32768])
            await writer.drain()

    task = asyncio.create_task(send())
    got = bytearray()
    while len(got) < n:
        chunk = await reader.read(65536)
        if not chunk:
            break
        got += chunk
    await task
    same = hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    print("client", fam, "sent", n, "got", len(got), "same" if same else "differ", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.readline)
    writer.close()


if __name__ == "__main__":
    if sys.argv[1] == "server":
        asyncio.run(serve(int(sys.argv[2])))
    else:
        asyncio.run(client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))

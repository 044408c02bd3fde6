"""IPv6 and dual-stack sockets, kernel against goxio with default parameters (issue 20).

    ipv6.py --pp6 BIN/pp6 --lib LIBGOXIO [--env "VAR=value ..."] [--reps R] [--secs S] [--port P]
            [--node NODE --wrk WRK] [--out FILE.md]

Part 1: TCP and UDP ping-pong of 64 B over ::1 (tests/bench/pp6.c, both ends under the same
variant), kernel and goxio interleaved (A B A B ...), R times: average, p50, p99 and p99.9 of the
half round trip, medians over the repetitions, and kernel/goxio. Part 2, when --node and --wrk are
given: a Node.js HTTP server with Node's default listen (an AF_INET6 dual-stack socket on every
address) and wrk against http://localhost, both under the variant: requests/s, goxio/kernel.
Printed (and written to --out) as Markdown. Standard library only; every run is bounded in time.
"""

import argparse
import os
import re
import statistics
import subprocess
import time

import drivers

PP = re.compile(r"rtts=(\d+) avg_us=([0-9.]+) p50_us=([0-9.]+) p99_us=([0-9.]+) p999_us=([0-9.]+)")
WRK = re.compile(r"Requests/sec:\s+([0-9.]+)")

NODE_SERVER = """
const http = require('http');
const body = 'x'.repeat(1024);
http.createServer((req, res) => { res.end(body); }).listen(+process.argv[2], () => console.log('ready'));
"""



def pingpong(args, proto, lib, port):
    env = drivers.env_with(lib, "VMA_TRACELEVEL=WARN " + args.env)
    srv = subprocess.Popen([args.pp6, "server", proto, "::1", str(port)], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(0.3)
        out = subprocess.run([args.pp6, "client", proto, "::1", str(port), str(args.secs), "64"], env=env,
                             capture_output=True, text=True, timeout=args.secs + 30)
    finally:
        srv.kill()
        srv.communicate(timeout=10)
    m = PP.search(out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("pp6 %s client failed (%d): %s" % (proto, out.returncode, out.stderr.strip()[-300:]))
    return {"avg": float(m.group(2)), "p50": float(m.group(3)), "p99": float(m.group(4)), "p999": float(m.group(5))}


def node_wrk(args, lib, port, script):
    env = drivers.env_with(lib, "VMA_TRACELEVEL=WARN " + args.env)
    srv = subprocess.Popen([args.node, script, str(port)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        if srv.stdout.readline().strip() != "ready":
            raise RuntimeError("node did not start: %s" % srv.stderr.read()[-300:])
        out = subprocess.run([args.wrk, "-t1", "-c50", "-d%ds" % args.secs, "http://localhost:%d/" % port], env=env,
                             capture_output=True, text=True, timeout=args.secs + 30)
    finally:
        srv.kill()
        srv.communicate(timeout=10)
    m = WRK.search(out.stdout)
    if out.returncode != 0 or not m or "Socket errors" in out.stdout or "Non-2xx" in out.stdout:
        raise RuntimeError("wrk failed (%d): %s %s" % (out.returncode, out.stdout[-300:], out.stderr[-300:]))
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pp6", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--env", default="")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--secs", type=int, default=2)
    ap.add_argument("--port", type=int, default=17800)
    ap.add_argument("--node")
    ap.add_argument("--wrk")
    ap.add_argument("--out")
    args = ap.parse_args()
    lines = ["| test | variant | avg us | p50 us | p99 us | p99.9 us |", "| --- | --- | --- | --- | --- | --- |"]
    port = args.port
    for proto in ("tcp", "udp"):
        runs = {"kernel": [], "goxio": []}
        for _ in range(args.reps):
            for name, lib in (("kernel", None), ("goxio", args.lib)):
                port += 1
                runs[name].append(pingpong(args, proto, lib, port))
        med = {n: {k: statistics.median(r[k] for r in rs) for k in ("avg", "p50", "p99", "p999")} for n, rs in runs.items()}
        title = "%s ping-pong 64 B over ::1" % proto.upper()
        for name in ("kernel", "goxio"):
            m = med[name]
            lines.append("| %s | %s | %.2f | %.2f | %.2f | %.2f |" % (title, name, m["avg"], m["p50"], m["p99"], m["p999"]))
        k, g = med["kernel"], med["goxio"]
        lines.append("| %s | *kernel/goxio* | %.2fx | %.2fx | %.2fx | %.2fx |" % (
            title, k["avg"] / g["avg"], k["p50"] / g["p50"], k["p99"] / g["p99"], k["p999"] / g["p999"]))
    lines += ["", "Medians of %d interleaved runs of %d s each (after 0.5 s of warm-up); latency is half the round trip."
              % (args.reps, args.secs)]
    if args.node and args.wrk:
        script = os.path.join(os.path.dirname(os.path.abspath(args.out or ".")), "ipv6-node-server.js")
        with open(script, "w") as f:
            f.write(NODE_SERVER)
        rps = {"kernel": [], "goxio": []}
        for _ in range(args.reps):
            for name, lib in (("kernel", None), ("goxio", args.lib)):
                port += 1
                rps[name].append(node_wrk(args, lib, port, script))
        k, g = statistics.median(rps["kernel"]), statistics.median(rps["goxio"])
        lines += ["", "| Node.js HTTP server, default listen (`[::]`, dual-stack), wrk to http://localhost | kernel req/s | goxio req/s | goxio/kernel |",
                  "| --- | --- | --- | --- |",
                  "| 1 KiB answer, wrk -t1 -c50 | %.0f | %.0f | %.2fx |" % (k, g, g / k)]
    text = "\n".join(lines) + "\n"
    drivers.emit(text, args.out)


if __name__ == "__main__":
    drivers.run(main, "ipv6.py")

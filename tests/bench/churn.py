"""Socket churn: a TCP connection per request and a new UDP socket per request, kernel against goxio.

    churn.py --churn BIN/churn --lib LIBGOXIO [--env "VAR=value ..."] [--rounds N] [--reps R]
             [--port P] [--out FILE.md]

Each case runs the client (tests/bench/churn.c) under the kernel and under goxio, interleaved
(A B A B ...), R times, against a server that runs under goxio ("goxio peer") or without it
("peer without goxio"); the kernel rows run both ends without the library. Printed (and written to
--out): p50, p99 and average per round, medians over the repetitions, and the ratio goxio/kernel.
Standard library only; every run is bounded in time.
"""

import argparse
import re
import statistics
import subprocess
import time

import drivers

LINE = re.compile(r"rounds=(\d+) p50_us=([0-9.]+) p90_us=([0-9.]+) p99_us=([0-9.]+) avg_us=([0-9.]+)")



def run_case(args, proto, server_lib, client_lib, port, pin):
    # pinned: both ends on CPU 0, so every round's wake-ups stay on one CPU; unpinned, the
    # scheduler's placement (same CPU or not: ~6 or ~50 us per wake-up on this VM) decides more
    # than either end's own costs, and flips between runs of the same program.
    pre = ["taskset", "-c", "0"] if pin else []
    srv = subprocess.Popen(pre + [args.churn, "server", proto, str(port)], env=drivers.env_with(server_lib, args.env),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(0.3)
        out = subprocess.run(pre + [args.churn, "client", proto, str(port), str(args.rounds)],
                             env=drivers.env_with(client_lib, args.env), capture_output=True, text=True,
                             timeout=120)
    finally:
        srv.kill()
        _, err = srv.communicate(timeout=10)
    m = LINE.search(out.stdout)
    if out.returncode != 0 or not m:
        raise RuntimeError("churn %s client failed (%d): %s %s" % (proto, out.returncode, out.stderr.strip(),
                                                                   err.decode(errors="replace").strip()[-300:]))
    return {"p50": float(m.group(2)), "p99": float(m.group(4)), "avg": float(m.group(5))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--churn", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--env", default="")
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--port", type=int, default=17600)
    ap.add_argument("--out")
    args = ap.parse_args()

    rows = []
    port = args.port
    for pin in (True, False):
        for proto in ("tcp", "udp"):
            for peer in ("goxio peer", "peer without goxio"):
                res = {"kernel": [], "goxio": []}
                for _ in range(args.reps):
                    for variant in ("kernel", "goxio"):
                        port += 1
                        client = args.lib if variant == "goxio" else ""
                        server = args.lib if (variant == "goxio" and peer == "goxio peer") else ""
                        res[variant].append(run_case(args, proto, server, client, port, pin))
                med = {v: {k: statistics.median(r[k] for r in res[v]) for k in ("p50", "p99", "avg")} for v in res}
                rows.append((pin, proto, peer, med))

    lines = ["| case | peer | placement | kernel p50 / p99 / avg (us) | goxio p50 / p99 / avg (us) | ratio p50 | ratio p99 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for pin, proto, peer, med in rows:
        k, g = med["kernel"], med["goxio"]
        name = "TCP connection per request" if proto == "tcp" else "UDP socket per request"
        lines.append("| %s | %s | %s | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.2fx | %.2fx |" % (
            name, peer, "both on CPU 0" if pin else "unpinned", k["p50"], k["p99"], k["avg"], g["p50"], g["p99"],
            g["avg"], g["p50"] / k["p50"], g["p99"] / k["p99"]))
    text = "\n".join(lines) + "\n\nRatios are goxio/kernel per round (lower is better; goal <= 1.10x), " \
        "medians of %d interleaved runs of %d rounds each (after 10%% warm-up). Both ends on CPU 0 " \
        "(`taskset -c 0`) measure what each end costs; unpinned, the scheduler puts client and server on " \
        "one CPU or on two from one run to the next (a wake-up across the VM's CPUs costs ~50 us, on one " \
        "~6 us), for the kernel alone as much as with goxio, and that decides the figure.\n" % (args.reps, args.rounds)
    drivers.emit(text, args.out)


if __name__ == "__main__":
    drivers.run(main, "churn.py")

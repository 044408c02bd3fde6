#!/usr/bin/env python3
"""Ping-pong by placement (issue 17): sockperf UDP and TCP ping-pong 64 B, both ends under goxio with
default parameters against both ends without goxio, with the two ends placed by taskset, in the
same run (A B A B ...).

Placements:
  split  server on CPU 0, client on CPU 1: each end has a CPU of its own, as a latency-critical
         deployment places them (part 3 runs unpinned: the scheduler puts the kernel's two ends on
         one CPU or on two from one run to the next, and on this VM a wake-up across CPUs costs
         ~50 us against ~6 us on one, so part 3's kernel figure lands on either level)
  same   both ends on CPU 0: two processes that answer each other on one CPU (a one-CPU container,
         a busy machine); a spinning receive holds the CPU its peer needs, so goxio must hand it
         over (offload/internal/wait/shared.go)

Goals: split, issue 17's ping-pong goals (average at least 20x lower, UDP p99.9 at least 10x
lower); same CPU, no slower than the kernel (average and p99.9 at most 1x the kernel's). Each
figure is the median of --reps runs; the load average is recorded before and after.
"""
import argparse
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import drivers  # noqa: E402  (sibling module)
import kpass  # noqa: E402  (the runner of one server and one client)

PLACES = {"split": ("server on CPU 0, client on CPU 1", 0, 1), "same": ("both ends on CPU 0", 0, 0)}
# (case, figure, placement, goal): the kernel's figure over goxio's (latencies: how many times
# lower goxio's is) must be at least goal.
GOALS = [("udp", "avg", "split", 20.0), ("udp", "p999", "split", 10.0), ("tcp", "avg", "split", 20.0),
         ("udp", "avg", "same", 1.0), ("udp", "p999", "same", 1.0), ("tcp", "avg", "same", 1.0),
         ("tcp", "p999", "same", 1.0)]
LABELS = {"avg": "average latency (us)", "p999": "p99.9 latency (us)"}


class Runner(kpass.Runner):
    def pingpong(self, case, variant, rep, place):
        """One sockperf ping-pong run: ({"avg": us, "p999": us}, "ok") or (None, why)."""
        self.port += 1
        _, srv_cpu, cli_cpu = PLACES[place]
        tcp = ["--tcp"] if case == "tcp" else []
        env = self.plain if variant == "kernel" else self.goxio
        base = os.path.join(self.args.logs, f"{case}-{variant}-{place}-r{rep}")
        srv_cmd = ["taskset", "-c", str(srv_cpu), "sockperf", "server", "-i", "127.0.0.1", "-p", str(self.port), *tcp]
        cli_cmd = ["taskset", "-c", str(cli_cpu), "sockperf", "ping-pong", "-i", "127.0.0.1", "-p", str(self.port),
                   *tcp, "-t", str(self.args.time), "-m", "64", "--mps", "1000000"]
        why = self.pair(f"{case} {variant} {place}", rep, base, srv_cmd, cli_cmd, env, env, udp=not tcp)
        if why:
            return None, why
        c = kpass.text(base + ".client.log")
        avg = re.search(r"avg-latency=([0-9.]+)", c)
        p999 = re.search(r"percentile 99\.900 =\s*([0-9.]+)", c)
        if not avg or not p999:
            return None, "no latency figures"
        return {"avg": float(avg.group(1)), "p999": float(p999.group(1))}, "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    drivers.pair_args(ap, "libgoxio.so to preload on both ends", 18900)
    args = ap.parse_args()
    if (os.cpu_count() or 1) < 2:
        drivers.emit("Not run: the split placement needs 2 CPUs.\n", args.out)
        return
    r = Runner(args)
    load_start = kpass.loadavg()
    figures, failures = {}, []
    plan = [(case, variant, place) for place in PLACES for case in ("udp", "tcp") for variant in ("kernel", "goxio")]
    for rep in range(1, args.reps + 1):
        for case, variant, place in plan:
            v, status = r.pingpong(case, variant, rep, place)
            print(f"{case} {variant} {place} r{rep}: {v} ({status})", file=sys.stderr)
            if v is None:
                failures.append((case, f"{variant} {place}", rep, status))
            else:
                figures.setdefault((case, variant, place), []).append(v)
    load_end = kpass.loadavg()

    rows, met = [], 0
    for case, fig, place, goal in GOALS:
        label = f"sockperf {case.upper()} ping-pong 64 B, {LABELS[fig]}; {PLACES[place][0]}"
        k = [v[fig] for v in figures.get((case, "kernel", place), [])]
        g = [v[fig] for v in figures.get((case, "goxio", place), [])]
        target = f"kernel/goxio >= {goal:g}x"
        if not k or not g:
            rows.append([label, target, "n/a", "n/a", "n/a", "**NOT MET** (no figures)", ""])
            continue
        kv, gv = statistics.median(k), statistics.median(g)
        ratio = kv / gv
        ok = ratio >= goal and len(k) == len(g) == args.reps
        met += ok
        spread = f"{len(g)} of {args.reps}; kernel {min(k):,.2f}-{max(k):,.2f}, goxio {min(g):,.2f}-{max(g):,.2f}"
        rows.append([label, target, f"{kv:,.2f}", f"{gv:,.2f}", f"{ratio:.2f}x", "met" if ok else "**NOT MET**", spread])
    head = ["case", "goal", "kernel", "goxio", "kernel/goxio", "verdict", "runs; range"]
    intro = (f"Both ends under goxio with default parameters (`LD_PRELOAD` only{', ' + args.env if args.env else ''}) "
             f"against both ends without goxio, interleaved in one run ({args.reps} rounds of every case, "
             f"variant and placement, {args.time} s per client run; medians; latency is sockperf's half round "
             f"trip). Load average {load_start} at start, {load_end} at end.")
    drivers.emit(drivers.part(intro, head, rows, f"{met} of {len(GOALS)} goals met.", failures, r.commands), args.out)


if __name__ == "__main__":
    drivers.run(main, "placement.py")

#!/usr/bin/env python3
"""VMA's extra API, zero-copy receive (issue 19): recvfrom_zcopy + free_packets against the copying
receive (recvfrom), in the same run (A B A B ...).

Cases, each over shared memory (both ends under goxio with default parameters):
  zbench drain    tests/vmaapi/zbench.c with "drain": the sender sends a burst while the receiver
                  does not read, and the receiver times how long it takes to take it; msg/s of the
                  receive alone (the sender's work and the kernel not in it). Modes copy, zcopy
                  (each packet freed before the next receive) and zcopy16 (freed 16 at a time),
                  64 B and 1400 B; the receive reads every byte of each datagram
  zbench stream   the same with the sender sending as fast as it can: the slower side's rate
  sockperf        with --sockperf (a sockperf built with --enable-vma-api: scripts/build-sockperf-vma.sh,
                  or BENCH_SOCKPERF_VMA), UDP throughput 64 B and 1400 B (msg/s the server
                  received) and ping-pong 64 B (average latency), in four modes in the same run:
                  kernel (no goxio), plain under goxio, --vmazcopyread (the server; on both ends
                  for ping-pong) and --vmarxfiltercb (the server answers from its receive callback)

Writes a Markdown section (--out) with the goal: zero-copy receive at least 1.2x the copying
receive's throughput (zbench drain, zcopy and zcopy16 against copy, 64 B and 1400 B). Each figure
is the median of --reps runs; the load average is recorded before and after.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import drivers  # noqa: E402  (sibling module)

GOAL = 1.2
SP_MODES = ("kernel", "plain", "zcopy", "filtercb")
SIZES = (64, 1400)
LINE = re.compile(r"^(\w+) size (\d+) msgs/s (\d+) MB/s ([0-9.]+) cpu_ns/msg (\d+) received (\d+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def median(v):
    return statistics.median(v) if v else None


def fmt(v, digits=0):
    return "n/a" if v is None else f"{v:,.{digits}f}"


class Runner:
    def __init__(self, args):
        self.args = args
        self.env = drivers.env_with(args.lib, args.env)
        self.kernel_env = drivers.env_with("", "")
        self.port = args.port
        self.commands = []

    def zbench(self, mode, size, drain, rep):
        """One zbench run: (msg/s, cpu ns per datagram) or (None, why)."""
        cmd = [self.args.zbench, mode, str(size), str(self.args.time)] + (["drain"] if drain else [])
        if rep == 1:
            self.commands.append(f"zbench: `{' '.join(cmd)}` (under `LD_PRELOAD`)")
        try:
            p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=self.args.time + 60)
        except subprocess.TimeoutExpired:
            return None, "timed out"
        m = LINE.search(p.stdout)
        if p.returncode != 0 or not m:
            return None, f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-200:]}"
        return (float(m.group(3)), float(m.group(5))), "ok"

    def sockperf(self, case, size, mode, rep):
        """One sockperf run in mode (one of SP_MODES): msg/s the server received (tp) or average
        latency (pp)."""
        self.port += 1
        sp, t = self.args.sockperf, str(self.args.time)
        env = self.kernel_env if mode == "kernel" else self.env
        sopt = {"zcopy": ["--vmazcopyread"], "filtercb": ["--vmarxfiltercb"]}.get(mode, [])
        opt = ["--vmazcopyread"] if mode == "zcopy" else []
        srv = [sp, "server", "-i", "127.0.0.1", "-p", str(self.port)] + sopt
        if case == "tp":
            cli = [sp, "throughput", "-i", "127.0.0.1", "-p", str(self.port), "-t", t, "-m", str(size), "--mps=max"]
        else:
            # --mps 1000000 as run.sh's ping-pong: sockperf sizes its sequence numbers from the rate
            # and aborts when a transport answers faster than its default allows
            cli = [sp, "ping-pong", "-i", "127.0.0.1", "-p", str(self.port), "-t", t, "-m", str(size),
                   "--mps", "1000000"] + opt
        if rep == 1:
            self.commands.append(f"sockperf {case} {size} B {mode}: server `{' '.join(srv)}`, "
                                 f"client `{' '.join(cli)}` ({'no goxio' if mode == 'kernel' else 'both under `LD_PRELOAD`'})")
        s = subprocess.Popen(srv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        try:
            time.sleep(0.5)
            c = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=self.args.time + 30)
        except subprocess.TimeoutExpired:
            c = None
        finally:
            try:
                os.killpg(s.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                sout, _ = s.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(s.pid, signal.SIGKILL)
                sout, _ = s.communicate()
        if c is None:
            return None, "client timed out"
        cout = ANSI.sub("", c.stdout + c.stderr)
        sout = ANSI.sub("", sout or "")
        if c.returncode != 0:
            return None, f"client exit {c.returncode}"
        if case == "pp":
            m = re.search(r"avg-latency=([0-9.]+)", cout)
            return (float(m.group(1)), "ok") if m else (None, "no latency figure")
        m = re.search(r"Total of (\d+) messages sent in ([0-9.]+) sec", cout)
        r = re.search(r"Total (\d+) messages received", sout)
        if not m or not r:
            return None, "no throughput figures"
        return int(r.group(1)) / float(m.group(2)), "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="libgoxio.so to preload")
    ap.add_argument("--env", default="", help="more variables of the runs (default parameters: none)")
    ap.add_argument("--zbench", required=True, help="tests/vmaapi/zbench.c, built")
    ap.add_argument("--sockperf", default="", help="a sockperf built with --enable-vma-api (optional)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--time", type=int, default=2, help="seconds per run")
    ap.add_argument("--port", type=int, default=17950)
    ap.add_argument("--out", required=True, help="Markdown section to write")
    args = ap.parse_args()
    r = Runner(args)
    load_start = loadavg()
    zb, sp, failures = {}, {}, []
    for rep in range(1, args.reps + 1):
        for drain in (True, False):
            for size in SIZES:
                for mode in ("copy", "zcopy", "zcopy16"):
                    v, why = r.zbench(mode, size, drain, rep)
                    print(f"zbench {mode} {size} drain={drain} r{rep}: {v} ({why})", file=sys.stderr)
                    if v is None:
                        failures.append(f"zbench {mode} {size}{' drain' if drain else ''} r{rep}: {why}")
                    else:
                        zb.setdefault((drain, size, mode), []).append(v)
        if args.sockperf:
            for case, size in (("tp", 64), ("tp", 1400), ("pp", 64)):
                for mode in SP_MODES:
                    v, why = r.sockperf(case, size, mode, rep)
                    print(f"sockperf {case} {size} {mode} r{rep}: {v} ({why})", file=sys.stderr)
                    if v is None:
                        failures.append(f"sockperf {case} {size} {mode} r{rep}: {why}")
                    else:
                        sp.setdefault((case, size, mode), []).append(v)
    load_end = loadavg()

    head = ["receive", "size", "copy msg/s", "zero-copy msg/s", "ratio", "goal", "verdict", "cpu ns/msg copy, zero-copy",
            "runs; range"]
    rows, met, total = [], 0, 0
    for drain in (True, False):
        for size in SIZES:
            c = zb.get((drain, size, "copy"), [])
            cv = median([x[0] for x in c])
            for mode in ("zcopy", "zcopy16"):
                z = zb.get((drain, size, mode), [])
                zv = median([x[0] for x in z])
                label = f"{mode} ({'drain' if drain else 'stream'})"
                cpu = f"{fmt(median([x[1] for x in c]))}, {fmt(median([x[1] for x in z]))}"
                runs = f"{len(z)} of {args.reps}"
                if cv is None or zv is None:
                    rows.append([label, str(size), fmt(cv), fmt(zv), "n/a", "", "no figures", cpu, runs])
                    total += drain
                    continue
                ratio = zv / cv
                spread = f"copy {fmt(min(x[0] for x in c))}-{fmt(max(x[0] for x in c))}, " \
                         f"zero-copy {fmt(min(x[0] for x in z))}-{fmt(max(x[0] for x in z))}"
                if drain:
                    total += 1
                    ok = ratio >= GOAL and len(z) == args.reps and len(c) == args.reps
                    met += ok
                    goal, verdict = f">= {GOAL:g}x", "met" if ok else "**NOT MET**"
                else:
                    goal, verdict = "", "(the slower side's rate)"
                rows.append([label, str(size), fmt(cv), fmt(zv), f"{ratio:.2f}x", goal, verdict, cpu, f"{runs}; {spread}"])
    md = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    md += ["| " + " | ".join(row) + " |" for row in rows]
    out = [f"`tests/vmaapi/zbench.c` over shared memory, both ends under goxio with default parameters "
           f"(`LD_PRELOAD` only{', ' + args.env if args.env else ''}), copying and zero-copy receive interleaved in "
           f"one run ({args.reps} rounds, {args.time} s per run; medians). \"drain\" times the receive alone "
           "(a burst sent while the receiver waits, then taken), \"stream\" a sender sending as fast as it can. "
           f"Load average {load_start} at start, {load_end} at end.", "", *md, "",
           f"{met} of {total} goals met (zero-copy receive at least {GOAL:g}x the copying receive, drain)."]
    if args.sockperf:
        srows = []
        for case, size, label, digits in (("tp", 64, "UDP throughput 64 B, msg/s the server received", 0),
                                          ("tp", 1400, "UDP throughput 1400 B, msg/s the server received", 0),
                                          ("pp", 64, "UDP ping-pong 64 B, average latency (us)", 3)):
            m = {mode: median(sp.get((case, size, mode), [])) for mode in SP_MODES}
            pv, zv = m["plain"], m["zcopy"]
            ratio = f"{zv / pv:.2f}x" if pv and zv else "n/a"
            runs = ", ".join(str(len(sp.get((case, size, mode), []))) for mode in SP_MODES)
            srows.append([label] + [fmt(m[mode], digits) for mode in SP_MODES] + [ratio, f"{runs} of {args.reps}"])
        sh = ["sockperf (--enable-vma-api build)", "kernel (no goxio)", "goxio plain", "goxio --vmazcopyread",
              "goxio --vmarxfiltercb", "--vmazcopyread / plain", "runs (each mode)"]
        out += ["", "| " + " | ".join(sh) + " |", "| " + " | ".join("---" for _ in sh) + " |"]
        out += ["| " + " | ".join(row) + " |" for row in srows]
    else:
        out += ["", "sockperf with --vmazcopyread and --vmarxfiltercb: not run (no sockperf built with "
                "--enable-vma-api: scripts/build-sockperf-vma.sh, run by scripts/install-deps.sh, says why; "
                "BENCH_SOCKPERF_VMA names one)."]
    if failures:
        out += ["", "Failed runs: " + "; ".join(failures)]
    out += ["", "Commands:", ""] + [f"- {c}" for c in r.commands]
    drivers.emit("\n".join(out) + "\n", args.out)


if __name__ == "__main__":
    main()

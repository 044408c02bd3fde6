#!/usr/bin/env python3
"""interleave.py: wall times of several commands, run one after the other round by round.

    interleave.py --rounds N --out PREFIX NAME=COMMAND...

Each round runs every command once (output to /dev/null), starting with a different one each
round, so that a drift of the machine (another tenant, the VM's CPUs moving between host cores)
falls on every command alike; whole runs of one command after another (hyperfine) put a drift of
a few percent on whichever command ran then. Writes PREFIX-NAME.json for each command in
hyperfine's layout ({"results": [{"command": ..., "times": [seconds...]}]}), which report.py reads.
A command that exits non-zero stops the run with its status.
"""
import argparse
import json
import shlex
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--out", required=True, help="prefix of the JSON files")
    ap.add_argument("commands", nargs="+", metavar="NAME=COMMAND")
    a = ap.parse_args()
    cmds = []
    for c in a.commands:
        name, sep, cmd = c.partition("=")
        if not sep or not name or not cmd:
            ap.error(f"{c!r}: want NAME=COMMAND")
        cmds.append((name, cmd, shlex.split(cmd)))
    times = {name: [] for name, _, _ in cmds}
    for r in range(a.warmup + a.rounds):
        k = r % len(cmds)
        for name, cmd, argv in cmds[k:] + cmds[:k]:
            t0 = time.perf_counter()
            rc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL).returncode
            dt = time.perf_counter() - t0
            if rc != 0:
                sys.exit(f"interleave: {cmd}: exit status {rc}")
            if r >= a.warmup:
                times[name].append(dt)
    for name, cmd, _ in cmds:
        with open(f"{a.out}-{name}.json", "w") as f:
            json.dump({"results": [{"command": cmd, "times": times[name]}]}, f)


if __name__ == "__main__":
    main()

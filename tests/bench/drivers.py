"""What the bench's Python drivers (churn.py, fanout.py, ipv6.py, kpass.py, placement.py) share: the
environment of a run under the library, the options and Markdown of a kernel-against-goxio part,
writing a part's Markdown, and the exit on a failed run."""

import os
import subprocess
import sys


def env_with(lib, extra):
    """The environment of a run: the bench's own without LD_PRELOAD; with lib, LD_PRELOAD=lib and
    the space-separated VAR=value settings of extra."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if lib:
        env["LD_PRELOAD"] = lib
        for kv in extra.split():
            k, _, v = kv.partition("=")
            env[k] = v
    return env


def pair_args(ap, lib_help, port):
    """Adds the options of a part that runs servers and clients under goxio and the kernel:
    --lib, --env, --reps, --time, --port, --logs, --out."""
    ap.add_argument("--lib", required=True, help=lib_help)
    ap.add_argument("--env", default="", help="more variables of the goxio ends (default parameters: none)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--time", type=int, default=2, help="seconds per client run")
    ap.add_argument("--port", type=int, default=port)
    ap.add_argument("--logs", required=True, help="folder for the runs' logs")
    ap.add_argument("--out", required=True, help="Markdown section to write")


def part(intro, head, rows, verdicts, failures, commands):
    """A part's Markdown: its introduction, a table (head, rows), the line of verdicts, the failed
    runs (case, variant, rep, status) and the commands run."""
    md = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    md += ["| " + " | ".join(row) + " |" for row in rows]
    out = [intro, "", *md, "", verdicts]
    if failures:
        out += ["", "Failed runs: " + "; ".join(f"{c} {v} r{n}: {s}" for c, v, n, s in failures)]
    out += ["", "Commands:", ""] + [f"- {c}" for c in commands]
    return "\n".join(out) + "\n"


def emit(text, out):
    """Prints a part's Markdown and writes it to out (a path, or None)."""
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text)


def run(main, name):
    """Runs main; a failed run (RuntimeError) or one past its time bound exits 1 with a line."""
    try:
        main()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print("%s: %s" % (name, e), file=sys.stderr)
        sys.exit(1)

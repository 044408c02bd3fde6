"""What the bench's Python drivers (churn.py, fanout.py, ipv6.py) share: the environment of a
run under the library, writing a part's Markdown, and the exit on a failed run."""

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

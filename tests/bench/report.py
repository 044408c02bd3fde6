#!/usr/bin/env python3
"""Turn the raw data of tests/bench/run.sh into REPORT.md (and the latency plot).

Standard library only; the plot uses matplotlib when the interpreter has it and
writes an SVG by hand otherwise (plot.py). Every number in the report is computed
here from the files under the raw folder: medians across repetitions, nearest-rank
percentiles across all samples, ratios goxio/kernel.
"""

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402  (sibling module)

# Goals of the foundation issue.
GOAL_PASSTHROUGH_RATIO = 1.15
GOAL_STARTUP_ADDED_MS = 5.0
GOAL_RSS_ADDED_MB = 32.0

PASSTHROUGH_CASES = [
    ("fcntl-pipe", "`fcntl(F_GETFL)` on a pipe", True),
    ("sockopt-unix", "`getsockopt(SO_TYPE)` on an AF_UNIX socket", True),
    ("sockopt-udp-os", "`getsockopt(SO_TYPE)` on an AF_INET UDP socket bound to 127.0.0.1, "
     "rule `use os udp_receiver *:*`", True),
    ("sockopt-udp", "`getsockopt(SO_TYPE)` on an unbound AF_INET UDP socket (offload candidate): "
     "through the engine (C->Go->kernel)", False),
]

SOCKPERF_TESTS = [
    ("udp-pp", "UDP ping-pong"),
    ("tcp-pp", "TCP ping-pong"),
    ("udp-tp", "UDP throughput"),
    ("tcp-tp", "TCP throughput"),
]

PCTS = ["50.000", "75.000", "90.000", "99.000", "99.900", "99.990"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def read_meta(raw):
    meta = {}
    with open(os.path.join(raw, "meta.env")) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            meta[key] = value
    return meta


def read_tsv(path):
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def percentile(values, p):
    """Nearest-rank percentile of values, p in 0..100."""
    s = sorted(values)
    if not s:
        return math.nan
    k = max(0, math.ceil(p / 100.0 * len(s)) - 1)
    return s[k]


def median(values):
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def fmt(v, digits=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:,.{digits}f}"


def ratio(a, b):
    if b is None or a is None or math.isnan(a) or math.isnan(b) or b == 0:
        return math.nan
    return a / b


def verdict(ok):
    return "met" if ok else "**missed**"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- passthrough
def passthrough(raw):
    data, best = {}, {}
    for case, variant, _rep, ns, low in read_tsv(os.path.join(raw, "passthrough.tsv")):
        data.setdefault((case, variant), []).append(float(ns))
        best.setdefault((case, variant), []).append(float(low))
    rows, results = [], {}
    for case, label, is_passthrough in PASSTHROUGH_CASES:
        k, t, g = (data.get((case, v), []) for v in ("kernel", "threaded", "goxio"))
        km, tm, gm = median(k), median(t), median(g)
        kb, tb, gb = (min(best.get((case, v), [math.nan])) for v in ("kernel", "threaded", "goxio"))
        r = ratio(gm, km)
        results[case] = (km, gm, r, is_passthrough, tm)
        goal = verdict(r <= GOAL_PASSTHROUGH_RATIO) if is_passthrough else "(no goal: engine path)"
        rows.append([label, fmt(km), f"{fmt(min(k))}-{fmt(max(k))}", fmt(tm), fmt(gm),
                     f"{fmt(min(g))}-{fmt(max(g))}", fmt(gm - km), fmt(r, 3), goal,
                     fmt(ratio(gm, tm), 3), f"{fmt(kb)} / {fmt(tb)} / {fmt(gb)}"])
    header = ["call", "kernel", "kernel range", "kernel, threaded process", "goxio", "goxio range",
              "goxio added", "goxio/kernel", f"goal <= {GOAL_PASSTHROUGH_RATIO}x", "goxio/threaded",
              "best batch kernel / threaded / goxio"]
    return table(header, rows), results


# ---------------------------------------------------------------- start-up and RSS
def startup(raw):
    times = {}
    for path in sorted(glob.glob(os.path.join(raw, "startup", "*.json"))):
        prog, variant, _ = os.path.basename(path)[:-5].rsplit("-", 2)
        with open(path) as f:
            res = json.load(f)["results"][0]
        times.setdefault((prog, variant), []).extend(t * 1000.0 for t in res["times"])
    rss = {}
    for prog, variant, _rep, kb, _wall in read_tsv(os.path.join(raw, "rss.tsv")):
        rss.setdefault((prog, variant), []).append(int(kb) / 1024.0)
    rows, results = [], {}
    labels = {"true": "`/bin/true`", "onesock": "`onesock` (one UDP socket, bind, close)"}
    for prog in ("true", "onesock"):
        kt, gt = times.get((prog, "kernel"), []), times.get((prog, "goxio"), [])
        kr, gr = rss.get((prog, "kernel"), []), rss.get((prog, "goxio"), [])
        added_ms = median(gt) - median(kt)
        added_mb = max(gr) - max(kr)
        results[prog] = (added_ms, added_mb)
        rows.append([labels[prog], len(kt), fmt(median(kt), 2), fmt(percentile(kt, 90), 2),
                     fmt(median(gt), 2), fmt(percentile(gt, 90), 2), fmt(added_ms, 2),
                     verdict(added_ms <= GOAL_STARTUP_ADDED_MS),
                     fmt(max(kr)), fmt(max(gr)), fmt(added_mb), verdict(added_mb <= GOAL_RSS_ADDED_MB)])
    header = ["program", "runs each", "kernel ms median", "kernel ms p90", "goxio ms median",
              "goxio ms p90", "added ms", f"goal <= +{GOAL_STARTUP_ADDED_MS:g} ms",
              "kernel max RSS MB", "goxio max RSS MB", "added MB", f"goal <= +{GOAL_RSS_ADDED_MB:g} MB"]
    return table(header, rows), results


# ---------------------------------------------------------------- sockperf
def parse_client(path):
    with open(path, errors="replace") as f:
        text = ANSI.sub("", f.read())
    r = {}
    m = re.search(r"avg-latency=([0-9.]+)", text)
    if m:
        r["avg"] = float(m.group(1))
    for p in PCTS:
        m = re.search(r"percentile " + re.escape(p) + r" =\s*([0-9.]+)", text)
        if m:
            r["p" + p] = float(m.group(1))
    m = re.search(r"<MAX> observation =\s*([0-9.]+)", text)
    if m:
        r["max"] = float(m.group(1))
    m = re.search(r"\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)", text)
    if m:
        r["rate"] = int(m.group(3)) / float(m.group(1))
    m = re.search(r"\[Total Run\] RunTime=[0-9.]+ sec;.*ReceivedMessages=(\d+)", text)
    if m:
        r["pp_total"] = int(m.group(1))
    m = re.search(r"Message Rate is (\d+) \[msg/sec\]", text)
    if m:
        r["sent_rate"] = float(m.group(1))
    m = re.search(r"Total of (\d+) messages sent in ([0-9.]+) sec", text)
    if m:
        r["tp_sent"], r["tp_time"] = int(m.group(1)), float(m.group(2))
    return r


def parse_server(path):
    with open(path, errors="replace") as f:
        m = re.search(r"Total (\d+) messages received", ANSI.sub("", f.read()))
    return int(m.group(1)) if m else None


def sockperf(raw):
    variants = []
    with open(os.path.join(raw, "variants.txt")) as f:
        for line in f:
            name, _, env = line.rstrip("\n").partition("|")
            variants.append((name, env))
    cpu = {}
    for test, name, rep, _cwall, ccpu, scpu in read_tsv(os.path.join(raw, "sockperf.tsv")):
        cpu[(test, name, rep)] = float(ccpu) + float(scpu)
    stats = {}
    for test, _ in SOCKPERF_TESTS:
        for name, _ in variants:
            runs = []
            for client in sorted(glob.glob(os.path.join(raw, "sockperf", f"{test}-{name}-r*.client.log"))):
                rep = client.rsplit("-r", 1)[1].split(".")[0]
                r = parse_client(client)
                received = parse_server(client.replace(".client.log", ".server.log"))
                if received is not None and "tp_time" in r:
                    r["recv_rate"] = received / r["tp_time"]
                # CPU of both ends over the whole run (warm-up included) per message handled.
                msgs = r.get("pp_total") if test.endswith("-pp") else (received or r.get("tp_sent"))
                if msgs and (test, name, rep) in cpu:
                    r["cpu"] = cpu[(test, name, rep)] / msgs * 1e6
                runs.append(r)
            keys = set().union(*runs) if runs else set()
            agg = {k: median([r[k] for r in runs if k in r]) for k in keys}
            agg["runs"] = len(runs)
            agg.setdefault("cpu", math.nan)
            stats[(test, name)] = agg
    base = variants[0][0]

    pp_rows = []
    for test, label in SOCKPERF_TESTS[:2]:
        for name, _ in variants:
            s = stats[(test, name)]
            pp_rows.append([label, name, s["runs"], fmt(s.get("avg"), 2), fmt(s.get("p50.000"), 2),
                            fmt(s.get("p99.000"), 2), fmt(s.get("p99.900"), 2), fmt(s.get("p99.990"), 2),
                            fmt(s.get("max"), 1), fmt(s.get("rate"), 0), fmt(s["cpu"], 2)])
        for name, _ in variants[1:]:
            s, k = stats[(test, name)], stats[(test, base)]
            pp_rows.append([label, f"*{name}/{base}*", "", *(fmt(ratio(s.get(x), k.get(x)), 2) for x in
                            ("avg", "p50.000", "p99.000", "p99.900", "p99.990", "max", "rate", "cpu"))])
    pp = table(["test", "variant", "runs", "avg us", "p50 us", "p99 us", "p99.9 us", "p99.99 us",
                "max us", "round trips/s", "CPU us/msg"], pp_rows)

    tp_rows = []
    for test, label in SOCKPERF_TESTS[2:]:
        for name, _ in variants:
            s = stats[(test, name)]
            tp_rows.append([label, name, s["runs"], fmt(s.get("sent_rate"), 0), fmt(s.get("recv_rate"), 0),
                            fmt(s["cpu"], 2)])
        for name, _ in variants[1:]:
            s, k = stats[(test, name)], stats[(test, base)]
            tp_rows.append([label, f"*{name}/{base}*", "", fmt(ratio(s.get("sent_rate"), k.get("sent_rate")), 2),
                            fmt(ratio(s.get("recv_rate"), k.get("recv_rate")), 2),
                            fmt(ratio(s["cpu"], k["cpu"]), 2)])
    tp = table(["test", "variant", "runs", "sent msg/s", "received msg/s", "CPU us/msg"], tp_rows)

    series = {}
    for test, label in SOCKPERF_TESTS[:2]:
        for name, _ in variants:
            s = stats[(test, name)]
            series[f"{label}, {name}"] = [s.get("p" + p, math.nan) for p in PCTS]
    return pp, tp, series, variants, stats


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--raw", required=True, help="raw data folder written by run.sh")
    ap.add_argument("--report", required=True, help="Markdown report to write")
    ap.add_argument("--plot-dir", required=True, help="folder for the latency plot")
    args = ap.parse_args()

    meta = read_meta(args.raw)
    pt_table, pt = passthrough(args.raw)
    st_table, st = startup(args.raw)
    pp_table, tp_table, series, variants, _ = sockperf(args.raw)
    plot_path = plot.latency_plot(series, [float(p) for p in PCTS], args.plot_dir,
                                  title=f"sockperf 64 B loopback latency, median of {meta['sp_reps']} runs")
    plot_rel = os.path.relpath(plot_path, os.path.dirname(os.path.abspath(args.report)))
    with open(os.path.join(args.raw, "commands.txt")) as f:
        commands = f.read().rstrip("\n")

    worst_pt = max(r for _, _, r, is_pt, _ in pt.values() if is_pt)
    worst_own = max(ratio(g, t) for _, g, _, is_pt, t in pt.values() if is_pt)
    worst_ms = max(a for a, _ in st.values())
    worst_mb = max(b for _, b in st.values())
    engine = pt["sockopt-udp"]
    summary = table(["measure", "goal", "measured (worst case)", "verdict"], [
        ["passthrough call, goxio/kernel", f"<= {GOAL_PASSTHROUGH_RATIO}x", f"{worst_pt:.3f}x",
         verdict(worst_pt <= GOAL_PASSTHROUGH_RATIO)],
        ["passthrough call, goxio/threaded process (the library's own share)", "(none)",
         f"{worst_own:.3f}x", "info"],
        ["start-up time added", f"<= +{GOAL_STARTUP_ADDED_MS:g} ms", f"+{worst_ms:.2f} ms",
         verdict(worst_ms <= GOAL_STARTUP_ADDED_MS)],
        ["max RSS added", f"<= +{GOAL_RSS_ADDED_MB:g} MB", f"+{worst_mb:.1f} MB",
         verdict(worst_mb <= GOAL_RSS_ADDED_MB)],
        ["call through the engine (C->Go->kernel), goxio/kernel", "(none)",
         f"{engine[2]:.3f}x (+{engine[1] - engine[0]:.0f} ns)", "info"],
    ])
    # How much of the worst passthrough call's added cost a threaded process pays without the library.
    worst_case = max((c for c in pt if pt[c][3]), key=lambda c: pt[c][2])
    km, gm, _, _, tm = pt[worst_case]
    reading = (f"Of the {gm - km:.0f} ns goxio adds to the worst passthrough call (`{worst_case}`), "
               f"{tm - km:.0f} ns are what the kernel charges any process with more than one thread "
               f"(the threaded baseline); the library's own share there is {gm / tm:.3f}x.")
    variant_list = "\n".join(f"- `{n}`: `{e or '(no preload)'}`" for n, e in variants)
    fake_note = ""
    if meta.get("fake") == "1":
        fake_note = ("\n> **Plumbing run with a FAKE preload library** (`GOXIO_LIB=fake`): "
                     "these numbers say nothing about goxio.\n")

    report = f"""# goxio benchmark report

Generated by `make bench` (`tests/bench/run.sh`, then `tests/bench/report.py`); do not edit by hand,
run `make bench` again. Raw data of the run: `tests/bench/out/raw/` (not committed).
{fake_note}
## Machine and build

| | |
| --- | --- |
| date | {meta['date']} |
| CPUs (nproc) | {meta['nproc']} |
| load average (1, 5, 15 min) | {meta['loadavg_start']} at start, {meta.get('loadavg_end', 'n/a')} at end |
| CPU model | {meta['cpu']} |
| memory | {meta['memory']} |
| kernel | {meta['kernel']} |
| glibc | {meta['glibc']} |
| goxio version | {meta['goxio_version']} |
| library | `{meta['goxio_lib']}` ({int(meta['goxio_lib_size']) / 1048576:.1f} MiB, sha256 {meta['goxio_lib_sha256']}...), measured as a copy in `tests/bench/out/bin/` |
| tools | sockperf {meta['sockperf']}, {meta['hyperfine']}, GNU time, gcc {meta['gcc']} |

## Summary

{summary}

{reading}

## Method

Kernel and goxio runs alternate in one run (A B A B ...), so both see the same machine state.
- Passthrough: `calls CASE {meta['calls_n']}` runs {meta['calls_n']} calls (after 10,000 warm-up calls) in
  21 batches, checks every result and gives the median batch's ns per call; {meta['calls_reps']} runs per case
  and variant. Each figure is the median of the runs, "range" their spread, "best batch" the fastest
  batch of all runs (the cost with the least interference); the goal is checked on the medians.
- Start-up: {meta['reps']} rounds of `hyperfine -N --warmup 3 --runs 20` per program and variant; median and
  p90 (nearest rank) over all runs. Max RSS: `/usr/bin/time -f %M`, {meta['reps']} runs each, largest value.
- sockperf: server and client on 127.0.0.1, both under the variant's environment, 64-byte messages,
  `-t {meta['sp_time']}` s per client run, {meta['sp_reps']} runs per test and variant; each cell is the median
  of the runs' own figures. Latency is sockperf's half round trip. "CPU us/msg" is the user+system CPU
  time of client and server over the whole run (warm-up included) per round trip (ping-pong) or per
  message received (throughput). Throughput
  "received msg/s" is the server's received-message count over the client's send time.
- Ratios are goxio/kernel: above 1 means goxio is slower (latency) or faster (msg/s).
- The library's only transport is the kernel today, so the goxio rows show the engine's own overhead.

sockperf variants (name: environment of both ends):
{variant_list}

## 1. Passthrough cost (ns per call)

Calls on fds that goxio does not offload never enter Go (DESIGN principle 2); the last row is a
socket the library keeps as an offload candidate, so its call goes C -> Go -> kernel. All figures are
ns per call. "kernel, threaded process" runs the same loop without the library in a process with one
idle thread: Linux takes a reference on the file in every fd system call once the fd table is shared
by several threads, which any library that brings a runtime thread (Go's) pays; goxio/threaded is the
share of the library's own trampoline.

{pt_table}

## 2. Start-up time and RSS

{st_table}

## 3. sockperf on loopback, 64 B

### Ping-pong latency (us, half round trip)

{pp_table}

![sockperf latency percentiles]({plot_rel})

### Throughput

{tp_table}

## Commands

Exactly as run (`tests/bench/out/...` relative to the repository root):

```
{commands}
```
"""
    with open(args.report, "w") as f:
        f.write(report)


if __name__ == "__main__":
    main()

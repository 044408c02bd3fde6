#!/usr/bin/env python3
"""Turn the raw data of tests/bench/run.sh into REPORT.md (and the latency plot).

Standard library only; the plot uses matplotlib when the interpreter has it and
writes an SVG by hand otherwise (plot.py). Every number in the report is computed
here from the files under the raw folder: medians across repetitions, nearest-rank
percentiles across all samples, ratios of the variants against the kernel, verdicts
on the goals of the foundation issue, of issue 4 (shared-memory UDP transport) and of issue 5
(shared-memory TCP transport: sockperf TCP and the TCP programs of programs.py). A report of
some sections only (BENCH_ONLY) says which ones did not run.
"""

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree for the sibling modules
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402  (sibling module)
import programs  # noqa: E402  (sibling module)

SECTIONS = ["passthrough", "startup", "sockperf", "mux", "programs", "veth", "churn", "fanout", "capture", "ipv6", "kpass",
            "zcopy", "placement"]

# Goals of the foundation issue.
GOAL_PASSTHROUGH_RATIO = 1.15
# Issue 16 (engine on demand): a process that loads no engine (/bin/true) pays at most this.
GOAL_STARTUP_ADDED_MS = 0.3
GOAL_RSS_ADDED_MB = 1.0
GOAL_SCRIPT_ADDED_PCT = 3.0

PASSTHROUGH_CASES = [
    ("fcntl-pipe", "`fcntl(F_GETFL)` on a pipe", True),
    ("sockopt-unix", "`getsockopt(SO_TYPE)` on an AF_UNIX socket", True),
    ("sockopt-udp-os", "`getsockopt(SO_TYPE)` on an AF_INET UDP socket bound to 127.0.0.1, "
     "rule `use os udp_receiver *:*`", True),
    ("sockopt-udp", "`getsockopt(SO_TYPE)` on an unbound AF_INET UDP socket (offload candidate): "
     "through the engine (C->Go->kernel)", False),
]

# Goals of issue 4 (shared-memory UDP transport), as kernel/variant (latency) and
# variant/kernel (msg/s) ratios of medians of repeated runs.
GOAL_AVG_RATIO = 20.0
GOAL_P999_RATIO = 10.0
GOAL_RATE_RATIO = 10.0
GOAL_UL_RATIO = 1.0  # issue 17: sockperf under-load with default parameters at least as good as the kernel
# Goal of issue 5 (shared-memory TCP transport) on sockperf TCP ping-pong, kernel/variant average.
GOAL_TCP_AVG_RATIO = 20.0

# sockperf tests: name, label, kind (latency: ping-pong or under-load, rate: throughput).
SOCKPERF_TESTS = [
    ("udp-pp", "UDP ping-pong 64 B", "latency"),
    ("udp-pp-1400", "UDP ping-pong 1400 B", "latency"),
    ("udp-ul", "UDP under-load 64 B", "latency"),
    ("tcp-pp", "TCP ping-pong 64 B", "latency"),
    ("udp-tp", "UDP throughput 64 B", "rate"),
    ("tcp-tp", "TCP throughput 64 B", "rate"),
]
MUX_TESTS = [
    ("mux-epoll", "`-F epoll`, 2 sockets"),
    ("mux-poll", "`-F poll`, 2 sockets"),
    ("mux-select", "`-F select`, 2 sockets"),
    ("mux-recvfrom", "`-F recvfrom`, 1 socket"),
]

PCTS = ["50.000", "75.000", "90.000", "99.000", "99.900", "99.990"]
PLOT_PCTS = ["50.000", "90.000", "99.000", "99.900", "99.990"]
# Lines of a failed run's logs worth quoting in the report.
FAILURE_LINE = re.compile(r"fatal error|panic|SIGSEGV|No messages were received|ERROR|Segmentation|"
                          r"Aborted|goxio (WARN|ERROR)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def lineping(meta):
    """The machine's floor for a hand-over between two CPUs (tests/bench/lineping.c), at the start
    of the run and at its end."""
    fields = dict(f.split("=", 1) for f in meta.get("lineping", "one_way_ns=n/a").split() if "=" in f)
    if fields.get("one_way_ns", "n/a") == "n/a":
        return "n/a (fewer than 2 CPUs allowed, or the peer thread got no CPU)"
    end = dict(f.split("=", 1) for f in meta.get("lineping_end", "one_way_ns=n/a").split() if "=" in f)
    at_end = f"; {end['one_way_ns']} ns at the end of the run" if end.get("one_way_ns", "n/a") != "n/a" else ""
    return (f"{fields['one_way_ns']} ns at the start (median of {fields.get('batches', '?')} batches of "
            f"{int(fields.get('rounds', 0)):,} round trips, {fields.get('min_ns')}-"
            f"{fields.get('max_ns')} ns; `tests/bench/lineping.c`){at_end}: the floor of every hop of a "
            "shared-memory ping-pong between two processes on two CPUs, which also pays its calls into the "
            "library and the ring's own lines; the VM's vCPUs move between host cores, and it with them")


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
    labels = {"true": "`/bin/true` (no engine)",
              "onesock": "`onesock` (one UDP socket, bind, one datagram: loads the engine)",
              "script200": "a shell script of 200 short commands (goxio run), on CPU 0"}
    for prog in ("true", "onesock", "script200"):
        kt, gt = times.get((prog, "kernel"), []), times.get((prog, "goxio"), [])
        if not kt or not gt:
            continue
        kr, gr = rss.get((prog, "kernel"), []), rss.get((prog, "goxio"), [])
        added_ms = median(gt) - median(kt)
        added_mb = max(gr) - max(kr) if kr and gr else 0.0
        results[prog] = (added_ms, added_mb)
        if prog == "script200":
            # goal: at most GOAL_SCRIPT_ADDED_PCT % more time; no RSS goal
            pct = 100.0 * added_ms / median(kt)
            # the script's percent and its decomposition's added ms (summary row)
            parts = results["script200-parts"] = {"pct": pct}
            rows.append([labels[prog], len(kt), fmt(median(kt), 2), fmt(percentile(kt, 90), 2),
                         fmt(median(gt), 2), fmt(percentile(gt, 90), 2), fmt(added_ms, 2) + f" ({pct:+.1f}%)",
                         verdict(pct <= GOAL_SCRIPT_ADDED_PCT) + f" (<= +{GOAL_SCRIPT_ADDED_PCT:g}%)",
                         "", "", "", ""])
            # Its decomposition, measured in the same rounds (info rows, no goal), and the same
            # script unpinned, with the kernel against itself (the scheduler's placement spread).
            ku = times.get(("script200u", "kernel"), [])
            for key, variant, label in (
                    ("script200", "emptylib", "the same script, an empty library preloaded (the floor of any LD_PRELOAD library)"),
                    ("script200", "preload", "the same script, libgoxio.so preloaded without goxio run"),
                    ("script200u", "goxio", "the same script unpinned (goxio run)"),
                    ("script200u", "kernelagain", "the same script unpinned, the kernel against itself (no library either time)")):
                base = kt if key == "script200" else ku
                vt = times.get((key, variant), [])
                if not vt or not base:
                    continue
                v_added = median(vt) - median(base)
                parts[key + "-" + variant] = (v_added, 100.0 * v_added / median(base))
                rows.append([label, len(vt), fmt(median(base), 2), fmt(percentile(base, 90), 2),
                             fmt(median(vt), 2), fmt(percentile(vt, 90), 2),
                             fmt(v_added, 2) + f" ({100.0 * v_added / median(base):+.1f}%)", "info", "", "", "", ""])
            continue
        goal_ms = verdict(added_ms <= GOAL_STARTUP_ADDED_MS) if prog == "true" else "(as today)"
        goal_mb = verdict(added_mb <= GOAL_RSS_ADDED_MB) if prog == "true" else "(as today)"
        rows.append([labels[prog], len(kt), fmt(median(kt), 2), fmt(percentile(kt, 90), 2),
                     fmt(median(gt), 2), fmt(percentile(gt, 90), 2), fmt(added_ms, 2), goal_ms,
                     fmt(max(kr)), fmt(max(gr)), fmt(added_mb), goal_mb])
    header = ["program", "runs each", "kernel ms median", "kernel ms p90", "goxio ms median",
              "goxio ms p90", "added ms", f"goal <= +{GOAL_STARTUP_ADDED_MS:g} ms",
              "kernel max RSS MB", "goxio max RSS MB", "added MB", f"goal <= +{GOAL_RSS_ADDED_MB:g} MB"]
    return table(header, rows), results


def execab(raw):
    """Medians of execab's three variants (none, empty library, libgoxio.so), or None."""
    try:
        with open(os.path.join(raw, "execab.txt")) as f:
            p50 = [float(m.group(1)) for m in re.finditer(r"p50_us=([0-9.]+)", f.read())]
    except OSError:
        return None
    return tuple(p50) if len(p50) == 3 else None


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


def read_variants(raw, name="variants.txt"):
    variants = []
    with open(os.path.join(raw, name)) as f:
        for line in f:
            name, _, env = line.rstrip("\n").partition("|")
            variants.append((name, env))
    return variants


def first_failure_line(base):
    """The first telling line of a failed run's client or server log, or ""."""
    for side in ("client", "server"):
        path = f"{base}.{side}.log"
        if not os.path.exists(path):
            continue
        with open(path, errors="replace") as f:
            for line in ANSI.sub("", f.read()).splitlines():
                if FAILURE_LINE.search(line):
                    return f"{side}: {line.strip()}"
    return ""


def sockperf_stats(raw, tests, tsv="sockperf.tsv", logs="sockperf"):
    """Per (test, variant): medians over the runs that succeeded, run and failure counts."""
    runs_tsv = {}
    for row in read_tsv(os.path.join(raw, tsv)):
        test, name, rep, _cwall, ccpu, scpu = row[:6]
        status = row[6] if len(row) > 6 else "ok"
        left = int(row[7]) if len(row) > 7 else 0
        runs_tsv.setdefault((test, name), []).append((rep, float(ccpu) + float(scpu), status, left))
    stats, failures = {}, []
    for test, kind in tests:
        for (t, name), rows in runs_tsv.items():
            if t != test:
                continue
            runs = []
            for rep, cpu, status, left in rows:
                base = os.path.join(raw, logs, f"{test}-{name}-r{rep}")
                if status != "ok":
                    failures.append((test, name, rep, status, first_failure_line(base)))
                    continue
                r = parse_client(base + ".client.log")
                received = parse_server(base + ".server.log")
                if kind == "latency" and "avg" not in r:
                    failures.append((test, name, rep, "no-latency-figures", first_failure_line(base)))
                    continue
                if received is not None and "tp_time" in r:
                    r["recv_rate"] = received / r["tp_time"]
                if received is not None:
                    r["received"] = received
                # CPU of both ends over the whole run (warm-up included) per message handled.
                msgs = r.get("pp_total") if test.endswith("pp") or test.startswith("mux-") else \
                    (received or r.get("tp_sent"))
                if msgs and not math.isnan(cpu):
                    r["cpu"] = cpu / msgs * 1e6
                runs.append(r)
            keys = set().union(*runs) if runs else set()
            agg = {k: median([r[k] for r in runs if k in r]) for k in keys}
            agg["ok"] = len(runs)
            agg["total"] = len(rows)
            agg["leftovers"] = sum(left for _, _, _, left in rows)
            agg.setdefault("cpu", math.nan)
            stats[(test, name)] = agg
    return stats, failures


def runs_cell(s):
    if s["ok"] == s["total"]:
        return str(s["total"])
    return f"{s['ok']} of {s['total']} (**{s['total'] - s['ok']} failed**)"


def sockperf(raw):
    variants = read_variants(raw)
    base = variants[0][0]
    tests = [(t, k) for t, _, k in SOCKPERF_TESTS] + [(t, "latency") for t, _ in MUX_TESTS]
    stats, failures = sockperf_stats(raw, tests)

    def speedup_row(test, name, cells):
        k, s = stats[(test, base)], stats[(test, name)]
        out = []
        for key, better in cells:
            if better == "lower":
                out.append(fmt(ratio(k.get(key), s.get(key)), 2))
            else:
                out.append(fmt(ratio(s.get(key), k.get(key)), 2))
        return out

    lat_keys = [("avg", "lower"), ("p50.000", "lower"), ("p90.000", "lower"), ("p99.000", "lower"),
                ("p99.900", "lower"), ("p99.990", "lower"), ("max", "lower"), ("rate", "higher"),
                ("cpu", "lower")]
    pp_rows = []
    for test, label, kind in SOCKPERF_TESTS:
        if kind != "latency":
            continue
        names = [n for n, _ in variants if (test, n) in stats]
        for name in names:
            s = stats[(test, name)]
            pp_rows.append([label, name, runs_cell(s), *(fmt(s.get(k), 2) for k in
                            ("avg", "p50.000", "p90.000", "p99.000", "p99.900", "p99.990")),
                            fmt(s.get("max"), 1), fmt(s.get("rate"), 0), fmt(s["cpu"], 2)])
        if (test, base) in stats:
            for name in names:
                if name != base:
                    pp_rows.append([label, f"*{name} speed-up*", "",
                                    *speedup_row(test, name, lat_keys)])
    pp = table(["test", "variant", "runs", "avg us", "p50 us", "p90 us", "p99 us", "p99.9 us", "p99.99 us",
                "max us", "replies/s", "CPU us/msg"], pp_rows) if pp_rows else "(not run)"

    tp_rows = []
    for test, label, kind in SOCKPERF_TESTS:
        if kind != "rate":
            continue
        names = [n for n, _ in variants if (test, n) in stats]
        for name in names:
            s = stats[(test, name)]
            tp_rows.append([label, name, runs_cell(s), fmt(s.get("sent_rate"), 0), fmt(s.get("recv_rate"), 0),
                            fmt(ratio(s.get("recv_rate"), s.get("sent_rate")) * 100, 1), fmt(s["cpu"], 2)])
        if (test, base) in stats:
            for name in names:
                if name != base:
                    tp_rows.append([label, f"*{name} speed-up*", "", *speedup_row(
                        test, name, [("sent_rate", "higher"), ("recv_rate", "higher")]), "",
                        *speedup_row(test, name, [("cpu", "lower")])])
    tp = table(["test", "variant", "runs", "sent msg/s", "received msg/s", "received/sent %", "CPU us/msg"],
               tp_rows) if tp_rows else "(not run)"

    mux_rows = []
    for test, label in MUX_TESTS:
        for name, _ in variants:
            if (test, name) not in stats:
                continue
            s = stats[(test, name)]
            mux_rows.append([label, name, "ok" if s["ok"] == s["total"] else "**failed**",
                             *(fmt(s.get(k), 2) for k in ("avg", "p50.000", "p99.000", "p99.900")),
                             fmt(s.get("max"), 1), fmt(s.get("rate"), 0)])
    mux = table(["server multiplexer", "variant", "status", "avg us", "p50 us", "p99 us", "p99.9 us",
                 "max us", "replies/s"], mux_rows) if mux_rows else "(not run)"

    series = {}
    for test, label, kind in SOCKPERF_TESTS:
        if kind != "latency":
            continue
        for name, _ in variants:
            if (test, name) in stats and stats[(test, name)]["ok"]:
                s = stats[(test, name)]
                series[f"{label}, {name}"] = [s.get("p" + p, math.nan) for p in PLOT_PCTS] + \
                    [s.get("max", math.nan)]
    return pp, tp, mux, series, variants, stats, failures


def shm_goals(stats, variants):
    """The issue-4 goals table: one row per goal, one ratio and verdict per shared-memory variant."""
    base = variants[0][0]
    shm = [n for n, e in variants if "GOXIO_SHM=1" in e and "GOXIO_SHM_TCP=1" not in e]
    goals = [
        ("average latency, UDP ping-pong 64 B", "udp-pp", "avg", "lower", GOAL_AVG_RATIO),
        ("average latency, UDP ping-pong 1400 B", "udp-pp-1400", "avg", "lower", GOAL_AVG_RATIO),
        ("p99.9 latency, UDP ping-pong 64 B", "udp-pp", "p99.900", "lower", GOAL_P999_RATIO),
        ("p99.9 latency, UDP ping-pong 1400 B", "udp-pp-1400", "p99.900", "lower", GOAL_P999_RATIO),
        ("msg/s received by the server, UDP throughput 64 B", "udp-tp", "recv_rate", "higher", GOAL_RATE_RATIO),
        # Issue 17: under-load with default parameters at least as good as the kernel; with
        # VMA_SPEC=latency (its polling threads hold their CPUs) the report says what it costs.
        ("average latency, UDP under-load 64 B (default parameters)", "udp-ul", "avg", "lower", GOAL_UL_RATIO),
        ("p99.9 latency, UDP under-load 64 B (default parameters)", "udp-ul", "p99.900", "lower", GOAL_UL_RATIO),
    ]
    envs = dict(variants)
    rows, verdicts = [], {}
    for label, test, key, better, goal in goals:
        k = stats.get((test, base), {})
        kv = k.get(key, math.nan)
        row = [label, f">= {goal:g}x" if goal else "(none)", fmt(kv, 2 if key != "recv_rate" else 0)]
        for name in shm:
            s = stats.get((test, name))
            if not s:
                row += ["not run", "", "n/a"]
                continue
            sv = s.get(key, math.nan)
            r = ratio(kv, sv) if better == "lower" else ratio(sv, kv)
            failed = s["total"] - s["ok"]
            if goal is not None and test == "udp-ul" and "VMA_SPEC" in envs.get(name, ""):
                row += [fmt(sv, 2), f"{fmt(r, 2)}x", "info (goal for default parameters only)"]
                continue
            if goal is None:
                v = "info"
            elif math.isnan(r):
                v = f"**missed** (no figures: {failed} of {s['total']} runs failed)"
            else:
                v = verdict(r >= goal and failed == 0)
                if failed:
                    v += f" ({failed} of {s['total']} runs failed)"
                elif r < goal:
                    v += f" ({goal / r:.1f}x short)"
            if goal is not None:
                verdicts.setdefault(name, []).append(r >= goal and failed == 0 and not math.isnan(r))
            row += [fmt(sv, 2 if key != "recv_rate" else 0), f"{fmt(r, 2)}x", v]
        rows.append(row)
    header = ["goal", "target", base]
    for name in shm:
        header += [name, "ratio", "verdict"]
    return table(header, rows), shm, verdicts


def tcp_goal_rows(stats, variants):
    """Rows (goal, target, variant, kernel, goxio, ratio, verdict) of issue 5 on sockperf TCP, one
    per goal and GOXIO_SHM_TCP=1 variant, and the verdicts of the rows that have a goal."""
    base = variants[0][0]
    goals = [
        ("sockperf TCP ping-pong 64 B, average latency (us)", "tcp-pp", "avg", "lower", GOAL_TCP_AVG_RATIO),
        ("sockperf TCP ping-pong 64 B, p99.9 latency (us)", "tcp-pp", "p99.900", "lower", None),
        ("sockperf TCP throughput 64 B, msg/s received by the server", "tcp-tp", "recv_rate", "higher", None),
    ]
    rows, verdicts = [], []
    for label, test, key, better, goal in goals:
        k = stats.get((test, base), {})
        kv = k.get(key, math.nan)
        digits = 0 if key == "recv_rate" else 2
        for name, env in variants:
            if "GOXIO_SHM_TCP=1" not in env or (test, name) not in stats:
                continue
            s = stats[(test, name)]
            sv = s.get(key, math.nan)
            r = ratio(kv, sv) if better == "lower" else ratio(sv, kv)
            failed = s["total"] - s["ok"]
            if goal is None:
                v = "info" + (f" ({failed} of {s['total']} runs failed)" if failed else "")
            elif math.isnan(r):
                v = f"**NOT MET** (no figures: {failed} of {s['total']} runs failed)"
            elif failed:
                v = f"**NOT MET** ({failed} of {s['total']} runs failed)"
            elif r < goal:
                v = f"**NOT MET** ({goal / r:.1f}x short)"
            else:
                v = "MET"
            if goal is not None:
                verdicts.append(not math.isnan(r) and r >= goal and failed == 0)
            rows.append([label, f">= {goal:g}x" if goal else "(none)", name, fmt(kv, digits), fmt(sv, digits),
                         "n/a" if math.isnan(r) else f"{fmt(r, 2)}x", v])
    return rows, verdicts


def foundation_parts(meta, raw, ran):
    """The foundation summary, its reading, and the passthrough and start-up tables (or notes
    that they did not run)."""
    pt_table = st_table = "(not run in this report)"
    summary_rows, reading = [], ""
    if "passthrough" in ran:
        pt_table, pt = passthrough(raw)
        worst_pt = max(r for _, _, r, is_pt, _ in pt.values() if is_pt)
        worst_own = max(ratio(g, t) for _, g, _, is_pt, t in pt.values() if is_pt)
        engine = pt["sockopt-udp"]
        summary_rows += [
            ["passthrough call, goxio/kernel", f"<= {GOAL_PASSTHROUGH_RATIO}x", f"{worst_pt:.3f}x",
             verdict(worst_pt <= GOAL_PASSTHROUGH_RATIO)],
            ["passthrough call, goxio/threaded process (the library's own share)", "(none)",
             f"{worst_own:.3f}x", "info"]]
        # How much of the worst passthrough call's added cost a threaded process pays without the library.
        worst_case = max((c for c in pt if pt[c][3]), key=lambda c: pt[c][2])
        km, gm, _, _, tm = pt[worst_case]
        reading = (f"Of the {gm - km:.0f} ns goxio adds to the worst passthrough call (`{worst_case}`), "
                   f"{tm - km:.0f} ns are what the kernel charges any process with more than one thread "
                   f"(the threaded baseline); the library's own share there is {gm / tm:.3f}x.")
    if "startup" in ran:
        st_table, st = startup(raw)
        if "true" in st:
            worst_ms, worst_mb = st["true"]
            summary_rows += [
                ["start-up time added, /bin/true (no engine)", f"<= +{GOAL_STARTUP_ADDED_MS:g} ms",
                 f"+{worst_ms:.2f} ms", verdict(worst_ms <= GOAL_STARTUP_ADDED_MS)],
                ["max RSS added, /bin/true (no engine)", f"<= +{GOAL_RSS_ADDED_MB:g} MB", f"+{worst_mb:.1f} MB",
                 verdict(worst_mb <= GOAL_RSS_ADDED_MB)]]
        if "script200" in st:
            sc, parts = st["script200"][0], st["script200-parts"]
            said = [f"{label} {parts[k][1]:+.1f}%" for k, label in
                    (("script200-emptylib", "an empty preloaded library alone"),
                     ("script200-preload", "libgoxio.so without goxio run"),
                     ("script200u-goxio", "unpinned goxio run"),
                     ("script200u-kernelagain", "unpinned, the kernel against itself"))
                    if k in parts]
            summary_rows.append(["a shell script of 200 short commands under goxio run, on CPU 0, time added",
                                 f"<= +{GOAL_SCRIPT_ADDED_PCT:g}%",
                                 f"+{sc:.2f} ms ({parts['pct']:+.1f}%)" + (" (same rounds: " + "; ".join(said) + ")" if said else ""),
                                 verdict(parts["pct"] <= GOAL_SCRIPT_ADDED_PCT)])
        ab = execab(raw)
        if ab:
            k, e, g = ab
            summary_rows.append(["one exec of `ls` with the library loaded (fork, exec, wait; execab is not under the library, so no exec check prunes it: what a program that keeps the library pays), interleaved exec by exec: time added", "(none)",
                                 f"an empty preloaded library {e - k:+.0f} us ({100 * (e - k) / k:+.1f}%), "
                                 f"libgoxio.so {g - k:+.0f} us ({100 * (g - k) / k:+.1f}%); without a library {k:.0f} us",
                                 "info"])
        if "onesock" in st:
            summary_rows.append(["start-up and RSS added, a process that loads the engine", "(as before)",
                                 f"+{st['onesock'][0]:.2f} ms, +{st['onesock'][1]:.1f} MB", "info"])
    if "passthrough" in ran:
        summary_rows.append(["call through the engine (C->Go->kernel), goxio/kernel", "(none)",
                             f"{engine[2]:.3f}x (+{engine[1] - engine[0]:.0f} ns)", "info"])
    summary = table(["measure", "goal", "measured (worst case)", "verdict"], summary_rows) \
        if summary_rows else "(not run in this report)"
    return summary, reading, pt_table, st_table


LOAD_NOTE = """The machine has {nproc} CPUs and other jobs ran during the measure (load average
{load_start} at start, {load_end} at end): a polling receiver holds a CPU, so
whenever both ends and another runnable process want the 2 CPUs, one of them waits for a scheduler
time slice (milliseconds); the tails above include such waits."""


def compact_leftovers(text, keep=5):
    """The leftovers file with at most keep file names per run, then how many more."""
    out, names = [], []

    def flush():
        out.extend(names[:keep])
        if len(names) > keep:
            out.append(f"  ... and {len(names) - keep} more")
        names.clear()

    for line in text.splitlines():
        if line.startswith("  "):
            names.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


def shm_udp_parts(stats, variants):
    """The issue-4 goals table, its one-line reading and the distribution-shape lines."""
    goals_table, shm_names, shm_verdicts = shm_goals(stats, variants)
    if not any((t, n) in stats for t, _, _ in SOCKPERF_TESTS if t.startswith("udp") for n in shm_names):
        return "(not run in this report)", "", ""
    shm_met = {n: all(v) and bool(v) for n, v in shm_verdicts.items()}
    shape = []
    for n in shm_names:
        k, v = stats.get(("udp-pp", variants[0][0]), {}), stats.get(("udp-pp", n), {})
        if not v.get("ok"):
            continue
        where = "above" if v.get("avg", 0) > v.get("p90.000", math.inf) else "below"
        shape.append(
            f"`{n}`, UDP ping-pong 64 B: median {fmt(v.get('p50.000'), 2)} us against the kernel's "
            f"{fmt(k.get('p50.000'), 2)} us ({fmt(ratio(k.get('p50.000'), v.get('p50.000')), 1)}x lower), p90 "
            f"{fmt(v.get('p90.000'), 2)} us, p99 {fmt(v.get('p99.000'), 2)} us, p99.9 {fmt(v.get('p99.900'), 2)} us "
            f"(kernel {fmt(k.get('p99.900'), 2)} us), max {fmt(v.get('max'), 0)} us; the average "
            f"({fmt(v.get('avg'), 2)} us) lies {where} the p90.")
    goal_reading = " ".join(
        f"`{n}`: {sum(shm_verdicts.get(n, []))} of {len(shm_verdicts.get(n, []))} goals met"
        f"{' (all)' if shm_met.get(n) else ''}." for n in shm_names)
    shape_text = chr(10).join("- " + x for x in shape) or "- (no shared-memory ping-pong figures)"
    return goals_table, goal_reading, "Where the time goes (distribution shape):\n" + shape_text + "\n\n" + LOAD_NOTE


# What sockperf under-load costs with VMA_SPEC=latency, and why (issue 17 asks the report to say).
UL_POLL_NOTE = """Under-load with `VMA_SPEC=latency` (information, not a goal): sockperf's under-load client
has two threads, one that sends and paces its sends by spinning, one that receives the replies (one
every 200 us). `VMA_RX_POLL=-1` (which `VMA_SPEC=latency` sets; `VMA_SELECT_POLL=-1` alone costs
nothing here, measured apart) makes that receiving thread poll without end as well, so three
threads want to spin (with the server's receive) on the machine's two CPUs. The waits see the crowd
(`/proc/loadavg`, more runnable threads than CPUs) and sleep instead of spinning; a wait that polls
without end and that the crowd put to sleep keeps counting toward the crowd while it sleeps (a
table of such held waits shared by the user's goxio processes, `offload/internal/wait/held.go`),
so both goxio waits sleep while the pacing sender spins, as the kernel's receivers do, and each
wakes to an idle CPU. Before that table they took turns being the sleeper, each woke to find both
CPUs held by spinners, and about one reply in seven waited a scheduler time slice (average 0.10x the
kernel's in the report before it). What polling without end costs on a machine with fewer CPUs
than spinning threads is then what the kernel's sleeping receives cost: the figures above. With
default parameters that receiving thread does not spin (its waits are longer than the 100 us a spin
is worth, `offload/internal/wait/avg.go`), and the two spinners left have a CPU each."""


# Goals of issue 6 (AF_XDP UDP transport) across the veth pair, goxio on both ends: average
# latency at most half the kernel's, messages per second at least 3 times the kernel's.
GOAL_VETH_AVG_RATIO = 2.0
GOAL_VETH_RATE_RATIO = 3.0
VETH_TESTS = [
    ("udp-pp", "UDP ping-pong 64 B", "latency"),
    ("udp-pp-1400", "UDP ping-pong 1400 B", "latency"),
    ("udp-tp", "UDP throughput 64 B", "rate"),
]


def veth6(raw, variants):
    """Part 6's IPv6 ping-pong (veth6.tsv, pp6): medians per variant and the kernel ratio, or a note."""
    path = os.path.join(raw, "veth6.tsv")
    skipped = os.path.join(raw, "veth6-skipped.txt")
    if os.path.exists(skipped) or not os.path.exists(path) or not os.path.getsize(path):
        why = open(skipped).read().strip() if os.path.exists(skipped) else "no data"
        return f"(not run: {why})"
    runs = {}
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) != 8 or f[0] != "udp-pp6":
            continue
        runs.setdefault(f[1], []).append((f[7], [float(x) for x in f[3:7]]))
    base = variants[0][0] if variants else "kernel"
    med = {}
    rows = []
    for name, _ in variants:
        rs = runs.get(name, [])
        ok = [v for st, v in rs if st == "ok" and not math.isnan(v[0])]
        if not rs:
            continue
        m = [statistics.median(v[i] for v in ok) if ok else math.nan for i in range(4)]
        med[name] = m
        rows.append([name, f"{len(ok)}/{len(rs)}", *(fmt(x, 2) for x in m),
                     "" if name == base else f"{fmt(ratio(med.get(base, [math.nan])[0], m[0]), 2)}x"])
    return table(["variant", "runs ok", "avg us", "p50 us", "p99 us", "p99.9 us", "kernel avg / avg"], rows)


def veth(raw):
    """Part 6 (veth.sh): the issue-6 goals table and the section's tables, or a note why not run."""
    skipped = os.path.join(raw, "veth-skipped.txt")
    tsv = os.path.join(raw, "veth.tsv")
    if os.path.exists(skipped) or not os.path.exists(tsv) or not os.path.getsize(tsv):
        why = open(skipped).read().strip() if os.path.exists(skipped) else "no data"
        note = f"(not run: {why})"
        return note, note
    variants = read_variants(raw, "veth-variants.txt")
    base = variants[0][0]
    stats, failures = sockperf_stats(raw, [(t, k) for t, _, k in VETH_TESTS], "veth.tsv", "veth")
    lat_rows, tp_rows = [], []
    for test, label, kind in VETH_TESTS:
        for name, _ in variants:
            s = stats.get((test, name))
            if not s:
                continue
            if kind == "latency":
                lat_rows.append([label, name, runs_cell(s), *(fmt(s.get(k), 2) for k in
                                 ("avg", "p50.000", "p90.000", "p99.000", "p99.900", "p99.990")),
                                 fmt(s.get("max"), 1), fmt(s.get("rate"), 0), fmt(s["cpu"], 2)])
            else:
                tp_rows.append([label, name, runs_cell(s), fmt(s.get("sent_rate"), 0), fmt(s.get("recv_rate"), 0),
                                fmt(ratio(s.get("recv_rate"), s.get("sent_rate")) * 100, 1), fmt(s["cpu"], 2)])
    lat = table(["test", "variant", "runs", "avg us", "p50 us", "p90 us", "p99 us", "p99.9 us", "p99.99 us",
                 "max us", "replies/s", "CPU us/msg"], lat_rows)
    tp = table(["test", "variant", "runs", "sent msg/s", "received msg/s", "received/sent %", "CPU us/msg"], tp_rows)
    goals = [
        ("average latency, UDP ping-pong 64 B", "udp-pp", "avg", "lower", GOAL_VETH_AVG_RATIO),
        ("average latency, UDP ping-pong 1400 B", "udp-pp-1400", "avg", "lower", GOAL_VETH_AVG_RATIO),
        ("msg/s received by the server, UDP throughput 64 B", "udp-tp", "recv_rate", "higher", GOAL_VETH_RATE_RATIO),
        ("msg/s sent by the client, UDP throughput 64 B", "udp-tp", "sent_rate", "higher", None),
        ("median latency, UDP ping-pong 64 B", "udp-pp", "p50.000", "lower", None),
        ("p99.9 latency, UDP ping-pong 64 B", "udp-pp", "p99.900", "lower", None),
    ]
    others = [n for n, _ in variants if n != base]
    rows = []
    for label, test, key, better, goal in goals:
        k = stats.get((test, base), {})
        kv = k.get(key, math.nan)
        digits = 0 if "rate" in key else 2
        row = [label, f">= {goal:g}x" if goal else "(none)", fmt(kv, digits)]
        for name in others:
            s = stats.get((test, name))
            if not s:
                row += ["not run", "", "n/a"]
                continue
            sv = s.get(key, math.nan)
            r = ratio(kv, sv) if better == "lower" else ratio(sv, kv)
            failed = s["total"] - s["ok"]
            if goal is None:
                v = "info"
            elif math.isnan(r):
                v = f"**missed** (no figures: {failed} of {s['total']} runs failed)"
            else:
                v = verdict(r >= goal and failed == 0)
                if failed:
                    v += f" ({failed} of {s['total']} runs failed)"
                elif r < goal:
                    v += f" ({goal / r:.1f}x short)"
            row += [fmt(sv, digits), f"{fmt(r, 2)}x", v]
        rows.append(row)
    header = ["goal", "target", base]
    for name in others:
        header += [name, "ratio", "verdict"]
    summary = table(header, rows)
    fail = ""
    if failures:
        fail = "\n\nFailed runs (left out of the medians):\n\n" + table(
            ["test", "variant", "run", "status", "log"],
            [[t, n, r, st, f"`{line}`" if line else ""] for t, n, r, st, line in failures])
    left = ""
    left_path = os.path.join(raw, "veth-leftovers.txt")
    if os.path.exists(left_path):
        left = "\n\n**Left behind:** " + open(left_path).read().strip()
    variant_list = "\n".join(f"- `{n}`: `{e or '(no preload)'}`" for n, e in variants)
    section = f"""Two network namespaces joined by a veth pair (`tests/bench/veth.sh`): sockperf server in one,
client in the other, both ends under the same variant; neighbours resolved beforehand. The server is
pinned to one CPU and the client to another for every variant alike (`BENCH_VETH_PIN`). Same method
as part 3 (medians of the runs' own figures; latency is the half round trip). The msg/s goal is
checked on what the server received, as issue 4's; what the client sent is shown for information. On
a veth pair the sending system call does the receiving side's work too (the peer's XDP program and,
for an AF_XDP socket in copy mode, the copy into its UMEM), and an AF_XDP socket in copy mode needs a
`sendto` kick to transmit: by default one per frame, so a goxio sender costs about as much CPU per
message as a kernel one there, unlike on a NIC with zero-copy AF_XDP. `goxio-xdp-batch` opts in to
kicks shared by the sends of a stream (`GOXIO_XDP_TX_DELAY`), which still leaves the receiving side's
work in every kick.

Variants (`IFACE` is each namespace's veth end):
{variant_list}

### Latency (us, half round trip)

{lat}

### Throughput

{tp}

### IPv6: UDP ping-pong 64 B (pp6)

The same pair over its IPv6 addresses (fd00:209::1 and ::2), `tests/bench/pp6.c` (Debian's sockperf
3.7 rejects IPv6 addresses) unpaced for the same duration, same variants and pinning; medians of the
runs' figures (half round trip).

{veth6(raw, variants)}{fail}{left}"""
    return summary, section


def read_md(raw, name):
    """A part's Markdown written by its driver, or a note that it did not run."""
    path = os.path.join(raw, name)
    if not os.path.exists(path):
        return "(not run in this report)"
    with open(path) as f:
        return f.read().strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--raw", required=True, help="raw data folder written by run.sh")
    ap.add_argument("--report", required=True, help="Markdown report to write")
    ap.add_argument("--plot-dir", required=True, help="folder for the latency plot")
    args = ap.parse_args()

    meta = read_meta(args.raw)
    ran = [x for x in meta.get("sections", ",".join(SECTIONS)).split(",") if x]
    summary, reading, pt_table, st_table = foundation_parts(meta, args.raw, ran)
    pp_table, tp_table, mux_table, series, variants, stats, failures = sockperf(args.raw)
    goals_table, goal_reading, shape_text = shm_udp_parts(stats, variants)
    tcp_rows, tcp_verdicts = tcp_goal_rows(stats, variants)

    prog_variants = programs.read_variants(args.raw)
    prog_stats, prog_failures = programs.collect(args.raw, int(meta.get("redis_n", "100000")))
    prog_rows, prog_verdicts = programs.goal_rows(prog_stats, prog_variants)
    prog_tables = programs.detail_tables(prog_stats, prog_variants, table) or "(not run in this report)"
    if prog_failures:
        prog_failure_text = ("Failed runs are left out of the medians and counted in the \"runs\" columns; "
                             "\"(figures kept)\" marks a run whose figures stand but whose server did not end "
                             "as it should (`exit-0` after SIGINT, or after its single test for iperf3). Logs: "
                             "`tests/bench/out/raw/programs/PROGRAM-VARIANT-rREP.*`.\n\n")
        prog_failure_text += table(["program", "variant", "run", "status", "first telling log line"],
                                   programs.failure_rows(prog_failures))
    elif "programs" in ran:
        prog_failure_text = "None: every program run of this report completed without errors."
    else:
        prog_failure_text = "(not run in this report)"
    issue5_rows = tcp_rows + prog_rows
    issue5_verdicts = tcp_verdicts + prog_verdicts
    if issue5_rows:
        issue5 = table(["goal", "target", "variant", "kernel", "goxio", "ratio", "verdict"], issue5_rows)
        issue5 += (f"\n\n{sum(issue5_verdicts)} of {len(issue5_verdicts)} goals met. Ratios are kernel/variant "
                   "for latencies, variant/kernel for rates; a variant with a failed run misses that goal.")
    else:
        issue5 = "(not run in this report)"

    plot_md = ""
    if series:
        plot_path = plot.latency_plot(series, [float(p) for p in PLOT_PCTS], args.plot_dir,
                                      title=f"sockperf on loopback, latency percentiles (median of "
                                            f"{meta['sp_reps']} runs each)")
        plot_rel = os.path.relpath(plot_path, os.path.dirname(os.path.abspath(args.report)))
        plot_md = f"![sockperf latency percentiles per variant, log scale]({plot_rel})"
    with open(os.path.join(args.raw, "commands.txt")) as f:
        commands = f.read().rstrip("\n")
    veth_summary, veth_section = veth(args.raw)
    churn_section = read_md(args.raw, "churn.md")
    fanout_section = read_md(args.raw, "fanout.md")
    fanout6_section = read_md(args.raw, "fanout6.md")
    ipv6_section = read_md(args.raw, "ipv6.md")
    kpass_section = read_md(args.raw, "kpass.md")
    zcopy_section = read_md(args.raw, "zcopy.md")
    placement_section = read_md(args.raw, "placement.md")
    veth_commands = os.path.join(args.raw, "veth-commands.txt")
    if os.path.exists(veth_commands):
        with open(veth_commands) as f:
            commands += "\n" + f.read().rstrip("\n")

    variant_list = "\n".join(f"- `{n}`: `{e or '(no preload)'}`" for n, e in variants)
    prog_variant_list = "\n".join(f"- `{n}`: `{e or '(no preload)'}`" for n, e in prog_variants) or "(not run)"
    if failures:
        failure_text = ("Runs that failed are left out of the medians above and counted in the \"runs\" "
                        "columns; the first telling line of each failed run's logs "
                        "(`tests/bench/out/raw/sockperf/TEST-VARIANT-rREP.{client,server}.log`):\n\n")
        failure_text += table(["test", "variant", "run", "status", "log"],
                              [[t, n, r, st, f"`{line}`" if line else ""] for t, n, r, st, line in failures])
    elif "sockperf" in ran or "mux" in ran:
        failure_text = "None: every sockperf run of this report completed."
    else:
        failure_text = "(not run in this report)"
    leftovers = ""
    left_path = os.path.join(args.raw, "shm-leftovers.txt")
    if os.path.exists(left_path):
        with open(left_path) as f:
            leftovers = f.read().strip()
    if leftovers:
        leftover_text = ("Segment files left in the private shared-memory folder after runs whose processes "
                         "had all exited (removed by run.sh; full list in `tests/bench/out/raw/shm-leftovers.txt`):"
                         "\n\n```\n" + compact_leftovers(leftovers) + "\n```")
    else:
        leftover_text = "No segment file was left in the private shared-memory folder after any run."
    notes = ""
    if meta.get("fake") == "1":
        notes += ("\n> **Plumbing run with a FAKE preload library** (`GOXIO_LIB=fake`): "
                  "these numbers say nothing about goxio.\n")
    skipped = [x for x in SECTIONS if x not in ran]
    if skipped:
        notes += (f"\n> **Partial run** (`BENCH_ONLY={','.join(ran)}`): not run: {', '.join(skipped)}. "
                  "Run `make bench` for the full report.\n")
    tools = [f"sockperf {meta['sockperf']}", meta["hyperfine"], "GNU time", f"gcc {meta['gcc']}"]
    tools += [meta[k] for k in ("iperf3", "redis", "nginx", "wrk") if meta.get(k)]
    tools = [t if not t.startswith("v=") else f"redis {t[2:]}" for t in tools]
    tools = [t if not t.startswith("nginx/") else t.replace("/", " ") for t in tools]

    report = f"""# goxio benchmark report

Generated by `make bench` (`tests/bench/run.sh`, then `tests/bench/report.py`); do not edit by hand,
run `make bench` again. Raw data of the run: `tests/bench/out/raw/` (not committed).
{notes}
## Machine and build

| | |
| --- | --- |
| date | {meta['date']} |
| CPUs (nproc) | {meta['nproc']} |
| load average (1, 5, 15 min) | {meta['loadavg_start']} at start, {meta.get('loadavg_end', 'n/a')} at end |
| CPU model | {meta['cpu']} |
| memory | {meta['memory']} |
| a cache line handed between CPU 0 and CPU 1, one way | {lineping(meta)} |
| kernel | {meta['kernel']} |
| glibc | {meta['glibc']} |
| goxio version | {meta['goxio_version']} |
| library | `{meta['goxio_lib']}` ({int(meta['goxio_lib_size']) / 1048576:.1f} MiB, sha256 {meta['goxio_lib_sha256']}...), measured as a copy in `tests/bench/out/bin/` |
| tools | {', '.join(tools)} |

## Summary: shared-memory TCP transport (issue 5)

Both ends under `goxio-shm-tcp` (`GOXIO_SHM=1 GOXIO_SHM_TCP=1`: a TCP connection between two goxio
processes moves its bytes through shared-memory rings) or `goxio-shm-tcp-poll` (the same with
`VMA_SPEC=latency`), against both ends on the kernel, in the same run; medians of {meta['sp_reps']} runs each.

{issue5}

## Summary: shared-memory UDP transport (issue 4)

Ratios of medians of {meta['sp_reps']} runs each (under-load: {meta.get('ul_reps', meta['sp_reps'])}); latency ratios are kernel/variant (how many times lower),
the msg/s ratio variant/kernel (how many times higher). Goals are checked on both shared-memory UDP
variants: `goxio-shm` with default parameters, and `goxio-shm-poll` with `VMA_SPEC=latency`
(`VMA_RX_POLL=-1`, `VMA_SELECT_POLL=-1`: receive and select calls poll forever instead of
sleeping after 100,000 polls). A variant with a failed run misses the goal of that test.

{goals_table}

{goal_reading}

{UL_POLL_NOTE}

{shape_text.format(nproc=meta['nproc'], load_start=meta['loadavg_start'],
                   load_end=meta.get('loadavg_end', 'n/a'))}

## Summary: ping-pong by placement (issue 17)

`tests/bench/placement.py`: the ping-pongs above run unpinned, where the scheduler puts the kernel's
two ends on one CPU or on two from one run to the next (a wake-up across this VM's CPUs costs ~50 us,
on one ~6 us), so the kernel's figure, and the ratio, land on either level. Here the two ends are
placed: on CPUs of their own (split), as a latency-critical deployment places them, and both on one
CPU (same), where goxio's spinning receives must hand the CPU over to the peer that produces their
data (`offload/internal/wait/shared.go`).

{placement_section}

## Summary: AF_XDP UDP transport across a veth pair (issue 6)

Ratios of medians across the veth pair of part 6, goxio on both ends against the kernel on both ends.

{veth_summary}

## Summary: kernel-served sockets (issue 17)

`tests/bench/kpass.py`: sockets whose path is the kernel (the peer has no goxio) cost what the
kernel's cost: their calls go from the trampoline to libc, and sends to destinations without a goxio
receiver skip the engine.

{kpass_section}

## Summary: VMA's extra API, zero-copy receive (issue 19)

`tests/bench/zcopy.py`: `recvfrom_zcopy` + `free_packets` hand each datagram over where it lies in
the ring and, through the library's box, enter the engine about once per 30 datagrams; the copying
receive enters it for every datagram and copies.

{zcopy_section}

## Summary: foundation (passthrough, start-up, RSS)

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
- sockperf: server and client on 127.0.0.1, both under the variant's environment,
  `-t {meta['sp_time']}` s per client run, {meta['sp_reps']} runs per test and variant, tests and variants
  interleaved within each round; each cell is the median of the runs' own figures (sockperf's
  percentiles of one run, then the median across runs). Latency is sockperf's half round trip.
  Under-load: `--mps {meta.get('ul_mps', 'n/a')} --reply-every 10` (latency of every 10th message),
  `-t {meta.get('ul_time', meta['sp_time'])}` s per client run, {meta.get('ul_reps', meta['sp_reps'])} runs per variant.
  "CPU us/msg" is the user+system CPU time of client and server over the whole run (warm-up included)
  per round trip (ping-pong) or per message received (throughput, under-load). Throughput
  "received msg/s" is the server's received-message count over the client's send time.
- Speed-up rows: kernel figure / variant figure for latencies and CPU, variant / kernel for rates;
  above 1 means the variant is better than the kernel.
- `goxio` has the ring transports off (`GOXIO_SHM=0 GOXIO_SHM_TCP=0`): every socket is the kernel's
  for good once its role is known (bind, connect, first send), after which its calls go from the
  trampoline to libc (issue 17); its rows show what the interception costs then. `goxio-shm` and `goxio-shm-poll` (`GOXIO_SHM=1`) carry UDP through rings and
  TCP through the kernel, so they run the UDP tests only (their TCP rows would be `goxio`'s);
  `goxio-shm-tcp` and `goxio-shm-tcp-poll` (`GOXIO_SHM_TCP=1` as well) carry TCP through rings and run
  the TCP tests only (their UDP path is the one of the variants without it). The shared-memory variants
  keep their segments in a private folder under /dev/shm (`GOXIO_SHM_DIR`), so that other goxio
  processes on the machine are not in their discovery table; the folder is checked after every run
  and removed at the end.
- Server multiplexers: `sockperf server -f FEED -F MUX` (two UDP sockets in the feed file, one for
  `recvfrom`, which serves a single socket), client `ping-pong -t {meta.get('mux_time', 'n/a')} -m 64` on the first
  socket; one run each.
- TCP programs: server and client on 127.0.0.1, both under `kernel` or both under `goxio-shm-tcp`,
  {meta['sp_reps']} runs per program and variant, interleaved; each figure is the median of the runs. iperf3:
  `iperf3 -s -1` and `iperf3 -c -t {meta.get('prog_time', 'n/a')} --json`, one stream, Gbit/s received. redis:
  `redis-server --save '' --appendonly no`, `redis-benchmark -t set,get -n {meta.get('redis_n', 'n/a')} --csv`
  (50 clients). nginx: a master and 2 worker processes (`master_process on`, `worker_processes 2`, `daemon off`, `access_log off`; under goxio each worker loads its own engine) serving a
  1 KiB file, `wrk -t1 -c50 -d{meta.get('prog_time', 'n/a')}s --latency`; a wrk run with socket errors or
  non-2xx answers counts as failed. CPU is the user+system time of server and client over the run,
  per GB received (iperf3) or per request. "goxio server during the run": a `goxio_stats --json`
  snapshot of the server 1 s into the client's run, over its live TCP connections (listening socket
  excluded): bytes through rings (fast-path counters) and through the kernel, connections on rings.

sockperf variants (name: environment of both ends):
{variant_list}

TCP program variants:
{prog_variant_list}

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

## 3. sockperf on loopback

### Latency (us, half round trip): ping-pong and under-load

{pp_table}

{plot_md}

### Throughput

{tp_table}

### Failed runs

{failure_text}

### Shared-memory segments left behind

{leftover_text}

## 4. sockperf server multiplexers

UDP ping-pong 64 B against `sockperf server -F MUX`, kernel and `goxio-shm`.

{mux_table}

## 5. TCP programs

Both ends under the same variant; speed-up rows are goxio/kernel for rates, kernel/goxio for
latencies and CPU (above 1: goxio better).

{prog_tables}

### Failed program runs

{prog_failure_text}

## 6. sockperf across a veth pair (AF_XDP transport)

{veth_section}

## 7. Socket churn (issue 17)

`tests/bench/churn.py`: a TCP connection per request (connect, 1 byte each way, close) and a new UDP
socket per request (socket, sendto, recv, close), the client under the kernel and under goxio, the
server under goxio ("goxio peer") or without it.

{churn_section}

## 8. Multicast fan-out (issue 17)

`tests/bench/fanout.py`: one publisher and 8 subscriber processes joined to one group on the
loopback interface, 64 B datagrams; the highest rate at which every subscriber gets every datagram.

{fanout_section}

The same with AF_INET6 sockets and the interface-local IPv6 group `ff01::7:7` on a veth interface
(`fanout.py --ipv6`: the kernel loops IPv6 multicast back to the host's members on an ordinary
interface, not on lo; an interface-local group never leaves the host):

{fanout6_section}

## 10. IPv6 and dual-stack sockets (issue 20)

`tests/bench/ipv6.py`: TCP and UDP ping-pong over `::1` (`tests/bench/pp6.c`: Debian's sockperf 3.7
rejects IPv6 addresses), both ends under the kernel or under goxio with default parameters; a
Node.js HTTP server with Node's default listen (an AF_INET6 dual-stack socket) and wrk to
`http://localhost`. Goals: ping-pong at least 20x lower average latency, Node at least 1.5x.

{ipv6_section}

## Commands

Exactly as run (`tests/bench/out/...` relative to the repository root):

```
{commands}
```
"""
    report = re.sub(r"\n{3,}", "\n\n", report)
    with open(args.report, "w") as f:
        f.write(report)


if __name__ == "__main__":
    main()

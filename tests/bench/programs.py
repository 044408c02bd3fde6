"""TCP programs of the bench report: iperf3, redis-server with redis-benchmark, nginx with wrk.

tests/bench/run.sh runs each program's server and client under the same variant (kernel, or
goxio-shm-tcp: TCP through shared-memory rings) and leaves, per run, the client's output
(PROG-VARIANT-rREP.client.log, .client.err), the server's (.server.log, nginx's .error.log), a
goxio_stats snapshot of the goxio server during the run (.stats.json) and a line of
programs.tsv (program, variant, rep, client wall s, client CPU s, server CPU s, status,
shared-memory segments left, how the server ended). This module turns them into medians per
program and variant, the goals of issue 5 and the report's tables. Standard library only.
"""

import csv
import json
import math
import os
import re
import statistics

# Programs: name, label, headline metric, its label.
PROGRAMS = [
    ("iperf3", "iperf3, 1 stream", "gbps", "Gbit/s received"),
    ("redis", "redis-server + redis-benchmark", "set_rps", "SET requests/s"),
    ("nginx", "nginx (master + 2 workers, 1 KiB file) + wrk", "rps", "requests/s"),
]

# Goals of issue 5 on the programs: program, metric, label, minimum ratio goxio/kernel.
GOALS = [
    ("iperf3", "gbps", "iperf3 throughput (Gbit/s received)", 3.0),
    ("redis", "set_rps", "redis-benchmark SET requests/s", 2.0),
    ("redis", "get_rps", "redis-benchmark GET requests/s", 2.0),
    ("nginx", "rps", "nginx + wrk requests/s", 1.5),
]

# Lines of a failed run's logs worth quoting.
FAILURE_LINE = re.compile(r"fatal error|panic|SIGSEGV|Segmentation|Aborted|goxio (WARN|ERROR)|"
                          r"\[(alert|emerg|crit)\]|Socket errors|Non-2xx|[Ee]rror|refused|reset by peer")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
WRK_LAT = re.compile(r"^\s*(50|75|90|99)%\s+([0-9.]+)(us|ms|s)\s*$", re.M)
WRK_AVG = re.compile(r"^\s*Latency\s+([0-9.]+)(us|ms|s)\s", re.M)
UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _read(path):
    if not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        return ANSI.sub("", f.read())


def _median(values):
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def parse_iperf3(base):
    """Figures of an iperf3 client run (its --json output), or (None, reason)."""
    text = _read(base + ".client.log")
    try:
        doc = json.loads(text)
    except ValueError:
        return None, "iperf3 printed no JSON"
    if doc.get("error"):
        return None, f"iperf3: {doc['error']}"
    end = doc.get("end", {})
    recv, sent = end.get("sum_received", {}), end.get("sum_sent", {})
    if not recv.get("bits_per_second"):
        return None, "iperf3 reported no received throughput"
    return {"gbps": recv["bits_per_second"] / 1e9, "sent_gbps": sent.get("bits_per_second", 0) / 1e9,
            "retransmits": float(sent.get("retransmits", math.nan)), "bytes": float(recv.get("bytes", 0))}, ""


def parse_redis(base):
    """SET and GET figures of a redis-benchmark --csv run, or (None, reason)."""
    r = {}
    for row in csv.reader(_read(base + ".client.log").splitlines()):
        if len(row) < 7 or row[0] not in ("SET", "GET"):
            continue
        try:
            rps, avg, p50, p99 = float(row[1]), float(row[2]), float(row[4]), float(row[6])
        except ValueError:
            continue
        k = row[0].lower()
        r.update({f"{k}_rps": rps, f"{k}_avg": avg, f"{k}_p50": p50, f"{k}_p99": p99})
    missing = [t for t in ("set", "get") if f"{t}_rps" not in r]
    if missing:
        return None, "redis-benchmark printed no " + " and ".join(t.upper() for t in missing) + " figures"
    return r, ""


def parse_wrk(base):
    """Figures of a wrk --latency run, or (None, reason): a run with socket errors or non-2xx
    answers is a failed run (its figures go into the reason)."""
    text = _read(base + ".client.log")
    m = re.search(r"Requests/sec:\s+([0-9.]+)", text)
    n = re.search(r"(\d+) requests in ", text)
    if not m or not n:
        return None, "wrk printed no request rate"
    r = {"rps": float(m.group(1)), "requests": float(n.group(1))}
    a = WRK_AVG.search(text)
    if a:
        r["lat_avg"] = float(a.group(1)) * UNIT_MS[a.group(2)]
    for p, v, unit in WRK_LAT.findall(text):
        r[f"lat_p{p}"] = float(v) * UNIT_MS[unit]
    errors = re.findall(r"Socket errors: [^\n]*|Non-2xx or 3xx responses: \d+", text)
    if errors:
        return None, f"wrk: {'; '.join(errors)} ({n.group(1)} requests, {m.group(1)} requests/s)"
    if r["requests"] == 0:
        return None, "wrk: 0 requests"
    return r, ""


PARSERS = {"iperf3": parse_iperf3, "redis": parse_redis, "nginx": parse_wrk}


def parse_stats(base):
    """The goxio server's TCP connections in its goxio_stats snapshots (the server and its worker
    processes): bytes through rings (fast path), bytes through the kernel, connections on rings,
    connections; None without a snapshot."""
    text = _read(base + ".stats.json")
    procs = []
    for line in text.splitlines():  # one document per process (the server, its workers)
        try:
            procs += json.loads(line).get("processes", [])
        except ValueError:
            continue
    if not procs:
        return None
    s = {"ring": 0, "kernel": 0, "conns_shm": 0, "conns": 0}
    for proc in procs:
        for sock in proc.get("sockets", []):
            if sock.get("type") != 1 or sock.get("tcp_state") == "LISTEN":
                continue
            c = sock.get("counters", {})
            s["ring"] += c.get("rx_bytes", 0) + c.get("tx_bytes", 0)
            s["kernel"] += c.get("rx_os_bytes", 0) + c.get("tx_os_bytes", 0)
            s["conns"] += 1
            s["conns_shm"] += sock.get("transport") == "shm"
    return s


def first_failure_line(base):
    """The first telling line of a run's logs (client, server, nginx's error log), or ""."""
    for suffix in (".client.err", ".server.log", ".error.log", ".client.log"):
        for line in _read(base + suffix).splitlines():
            if FAILURE_LINE.search(line) and "goxio INFO" not in line:
                return f"{suffix[1:]}: {line.strip()[:300]}"
    return ""


def read_variants(raw):
    path = os.path.join(raw, "programs-variants.txt")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [tuple(line.rstrip("\n").split("|", 1)) for line in f if line.strip()]


def collect(raw, redis_n):
    """Per (program, variant): medians over the runs that succeeded, the runs' headline figures,
    run counts, CPU per unit of work, the ring snapshot; and the failures and anomalies."""
    path = os.path.join(raw, "programs.tsv")
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    by_key = {}
    for row in rows:
        by_key.setdefault((row[0], row[1]), []).append(row)
    stats, failures = {}, []
    for (prog, name), runs in by_key.items():
        ok_runs, snaps, left = [], [], 0
        for prog_, name_, rep, _cwall, ccpu, scpu, status, leftovers, end in runs:
            base = os.path.join(raw, "programs", f"{prog_}-{name_}-r{rep}")
            left += int(leftovers)
            snap = parse_stats(base)
            if snap:
                snaps.append(snap)
            line = first_failure_line(base)
            if status != "ok":
                failures.append((prog, name, rep, f"{status} (server {end})", line, True))
                continue
            r, reason = PARSERS[prog](base)
            if r is None:
                failures.append((prog, name, rep, "wrk errors" if reason.startswith("wrk:") else "no figures",
                                 reason + (f"; {line}" if line else ""), True))
                continue
            if end != "exit-0":
                # The figures stand, but the server did not end as it should (crash, or SIGKILL
                # after it ignored SIGINT for 3 s).
                failures.append((prog, name, rep, f"server ended {end}", line, False))
            cpu = float(ccpu) + float(scpu)
            if prog == "iperf3" and r.get("bytes"):
                r["cpu"] = cpu / (r["bytes"] / 1e9)
            elif prog == "redis":
                r["cpu"] = cpu / (2 * redis_n) * 1e6
            elif prog == "nginx" and r.get("requests"):
                r["cpu"] = cpu / r["requests"] * 1e6
            ok_runs.append(r)
        keys = set().union(*ok_runs) if ok_runs else set()
        agg = {k: _median([r[k] for r in ok_runs if k in r]) for k in keys}
        agg["runs"] = ok_runs
        agg["ok"], agg["total"], agg["leftovers"] = len(ok_runs), len(runs), left
        agg["snaps"] = snaps
        stats[(prog, name)] = agg
    return stats, failures


def fmt(v, digits=1):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:,.{digits}f}"


def ratio(a, b):
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return math.nan
    return a / b


def runs_cell(s):
    if s["ok"] == s["total"]:
        return str(s["total"])
    return f"{s['ok']} of {s['total']} (**{s['total'] - s['ok']} failed**)"


def rings_cell(s):
    """The ring snapshot of a variant: median bytes through rings and through the kernel of its
    server's live TCP connections, and how many of them were on rings."""
    snaps = s.get("snaps") or []
    if not snaps:
        return "n/a"
    ring = _median([x["ring"] for x in snaps])
    kern = _median([x["kernel"] for x in snaps])
    shm = _median([x["conns_shm"] for x in snaps])
    conns = _median([x["conns"] for x in snaps])
    return f"{ring / 1e6:,.1f} MB rings, {kern / 1e3:,.1f} kB kernel; {shm:.0f} of {conns:.0f} conns on rings"


def spread(s, key, digits):
    vals = [r[key] for r in s.get("runs", []) if key in r]
    if not vals:
        return "n/a"
    return f"{fmt(min(vals), digits)}-{fmt(max(vals), digits)}"


# Detail columns per program: (metric, header, digits, better: higher/lower/None).
COLUMNS = {
    "iperf3": [("gbps", "Gbit/s received", 2, "higher"), ("sent_gbps", "Gbit/s sent", 2, "higher"),
               ("retransmits", "retransmits", 0, None), ("cpu", "CPU s/GB", 3, "lower")],
    "redis": [("set_rps", "SET req/s", 0, "higher"), ("set_p50", "SET p50 ms", 3, "lower"),
              ("set_p99", "SET p99 ms", 3, "lower"), ("get_rps", "GET req/s", 0, "higher"),
              ("get_p50", "GET p50 ms", 3, "lower"), ("get_p99", "GET p99 ms", 3, "lower"),
              ("cpu", "CPU us/req", 2, "lower")],
    "nginx": [("rps", "req/s", 0, "higher"), ("lat_avg", "avg ms", 3, "lower"), ("lat_p50", "p50 ms", 3, "lower"),
              ("lat_p90", "p90 ms", 3, "lower"), ("lat_p99", "p99 ms", 3, "lower"), ("cpu", "CPU us/req", 2, "lower")],
}


def detail_tables(stats, variants, table):
    """One table per program that ran: a row per variant, then a speed-up row per goxio variant."""
    out = []
    base = variants[0][0] if variants else "kernel"
    for prog, label, head, head_label in PROGRAMS:
        names = [n for n, _ in variants if (prog, n) in stats]
        if not names:
            continue
        cols = COLUMNS[prog]
        rows = []
        for name in names:
            s = stats[(prog, name)]
            rows.append([name, runs_cell(s), *(fmt(s.get(k, math.nan), d) for k, _, d, _ in cols),
                         spread(s, head, 0 if "rps" in head else 2), rings_cell(s),
                         str(s["leftovers"]) if s["leftovers"] or "GOXIO_SHM=1" in dict(variants)[name] else ""])
        k = stats.get((prog, base))
        for name in names:
            if name == base or not k:
                continue
            s = stats[(prog, name)]
            cells = []
            for key, _, _, better in cols:
                if better == "higher":
                    cells.append(fmt(ratio(s.get(key, math.nan), k.get(key, math.nan)), 2))
                elif better == "lower":
                    cells.append(fmt(ratio(k.get(key, math.nan), s.get(key, math.nan)), 2))
                else:
                    cells.append("")
            rows.append([f"*{name} speed-up*", "", *cells, "", "", ""])
        header = ["variant", "runs", *(h for _, h, _, _ in cols), f"{head_label} range",
                  "goxio server during the run", "segments left"]
        out.append(f"### {label}\n\n" + table(header, rows))
    return "\n\n".join(out)


def goal_rows(stats, variants):
    """Rows (goal, target, variant, kernel, goxio, ratio, verdict) of the program goals, and the
    verdicts as booleans."""
    base = variants[0][0] if variants else "kernel"
    rows, verdicts = [], []
    for prog, key, label, goal in GOALS:
        k = stats.get((prog, base))
        for name, env in variants:
            if name == base or (prog, name) not in stats:
                continue
            s = stats[(prog, name)]
            kv = k.get(key, math.nan) if k else math.nan
            sv = s.get(key, math.nan)
            r = ratio(sv, kv)
            failed = s["total"] - s["ok"]
            kfailed = (k["total"] - k["ok"]) if k else 0
            ok = not math.isnan(r) and r >= goal and failed == 0
            if math.isnan(r):
                v = f"**NOT MET** (no figures: {failed} of {s['total']} runs failed" + \
                    (f", kernel {kfailed} failed" if kfailed else "") + ")"
            elif failed:
                v = f"**NOT MET** ({failed} of {s['total']} runs failed)"
            elif r < goal:
                v = f"**NOT MET** ({goal / r:.1f}x short)"
            else:
                v = "MET"
            verdicts.append(ok)
            digits = 2 if key == "gbps" else 0
            rows.append([label, f">= {goal:g}x", name, fmt(kv, digits), fmt(sv, digits),
                         "n/a" if math.isnan(r) else f"{fmt(r, 2)}x", v])
    return rows, verdicts


def failure_rows(failures):
    """Rows of the failed runs (and server anomalies) table."""
    return [[p, n, r, st + ("" if counted else " (figures kept)"), f"`{line}`" if line else ""]
            for p, n, r, st, line, counted in failures]

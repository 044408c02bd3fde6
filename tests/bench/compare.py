"""Before/after comparison of two sockperf variants of one bench run, with the run-to-run noise.

    compare.py RAW_DIR NEW_VARIANT BASE_VARIANT [NEW_VARIANT BASE_VARIANT ...]

RAW_DIR is a bench run's raw folder (tests/bench/out/raw); the base variants come from
BENCH_VARIANTS_EXTRA (for example "base-shm|LD_PRELOAD=/abs/old/libgoxio.so GOXIO_SHM=1"), so the
old and the new library ran interleaved on the same machine. For every test both variants ran, and
every figure (average, p50, p99, p99.9 latency; received msg/s), it prints the median of the runs of
each, their ratio (above 1: the new one is better) and the noise: the largest relative spread
(max - min over median) of the runs of either variant. A figure is "worse" only when the new median
is worse than the base one by more than that noise. Standard library only.
"""

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (parse_client, read_tsv)

FIGURES = [("avg", "average latency (us)", False), ("p50.000", "p50 latency (us)", False),
           ("p99.000", "p99 latency (us)", False), ("p99.900", "p99.9 latency (us)", False),
           ("rate", "received msg/s", True)]


def runs(raw, test, variant):
    out = []
    for row in report.read_tsv(os.path.join(raw, "sockperf.tsv")):
        if row[0] == test and row[1] == variant and row[6] == "ok":
            r = report.parse_client(os.path.join(raw, "sockperf", "%s-%s-r%s.client.log" % (test, variant, row[2])))
            srv = report.parse_server(os.path.join(raw, "sockperf", "%s-%s-r%s.server.log" % (test, variant, row[2])))
            if srv is not None and "tp_time" in r:
                r["rate"] = srv / r["tp_time"]
            out.append(r)
    return out


def spread(values):
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else 0.0


def main():
    raw, pairs = sys.argv[1], sys.argv[2:]
    tests = sorted({row[0] for row in report.read_tsv(os.path.join(raw, "sockperf.tsv"))})
    print("| test | figure | new | base | new median | base median | new/base (>1 better) | noise | verdict |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    worse = 0
    for new, base in zip(pairs[0::2], pairs[1::2]):
        for test in tests:
            a, b = runs(raw, test, new), runs(raw, test, base)
            if not a or not b:
                continue
            for key, name, higher in FIGURES:
                va, vb = [r[key] for r in a if key in r], [r[key] for r in b if key in r]
                if len(va) < 2 or len(vb) < 2:
                    continue
                ma, mb = statistics.median(va), statistics.median(vb)
                better = (ma / mb) if higher else (mb / ma)
                noise = max(spread(va), spread(vb))
                bad = better < 1 - noise
                worse += bad
                print("| %s | %s | %s | %s | %.2f | %.2f | %.3f | %.1f%% | %s |" % (
                    test, name, new, base, ma, mb, better, 100 * noise, "**worse**" if bad else "within noise or better"))
    print()
    print("%d figure(s) worse than the base by more than the run-to-run noise." % worse)


if __name__ == "__main__":
    main()

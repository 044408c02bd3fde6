#!/usr/bin/env python3
"""tests/bench/tail.py: explain the slow round trips of one tail.sh run.

Usage: tail.py BASE [SLOW_US]. BASE.csv is sockperf's --full-log (packet, send time, receive time,
latency in us), BASE.events the `perf script` text of the run's scheduler, interrupt, softirq,
TLB and timer events (CLOCK_MONOTONIC), BASE.irq0/irq1 and BASE.softirq0/softirq1 copies of
/proc/interrupts and /proc/softirqs before and after.

The two polling threads are the two threads with the most CPU time in the trace. An
"interference" is anything that takes the CPU of a polling thread while it runs there: an
interrupt or softirq, a TLB flush, a switch to another task (named by its command; a thread of
the same programs is "sockperf-other-thread": the Go runtime's threads under goxio), or the two
pollers sharing one CPU. sockperf's clock is not perf's: the offset between them is the one that
lines the slowest round trips up with the pollers' switch-outs. Each slow round trip is then
attributed to the set of interferences seen between its send (minus 5 us) and its receive.
"""
import bisect
import collections
import re
import sys

SWITCH = re.compile(r'prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
EVENT = re.compile(r'^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$')


def samples(path):
    out = []
    with open(path) as f:
        for line in f:
            p = line.split(',')
            if len(p) != 4:
                continue
            try:
                out.append((float(p[1]), float(p[2]), float(p[3])))
            except ValueError:
                pass
    return out


def events(path):
    out = []
    with open(path) as f:
        for line in f:
            m = EVENT.match(line)
            if m:
                out.append((float(m[5]), int(m[4]), m[6], m[7]))
    out.sort()
    return out


def counters(base, secs):
    """Per-second deltas of /proc/interrupts and /proc/softirqs rows, per CPU."""
    def read(path):
        rows = {}
        with open(path) as f:
            for line in f:
                p = line.split()
                if not p or not p[0].endswith(':'):
                    continue
                vals = []
                for x in p[1:]:
                    if not x.isdigit():
                        break
                    vals.append(int(x))
                rows[p[0][:-1]] = vals
        return rows
    parts = []
    for a, b in (('irq0', 'irq1'), ('softirq0', 'softirq1')):
        try:
            before, after = read(f'{base}.{a}'), read(f'{base}.{b}')
        except FileNotFoundError:
            continue
        for k, v in after.items():
            d = [y - x for x, y in zip(before.get(k, []), v)]
            if d and sum(d) > 0 and not k.isdigit():
                parts.append(f'{k} ' + '/'.join(str(round(x / secs)) for x in d))
    return ', '.join(parts)


def main():
    base = sys.argv[1]
    slow_us = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    xs = samples(base + '.csv')
    evs = events(base + '.events')
    if not xs or not evs:
        sys.exit(f'tail.py: no samples or no events for {base}')
    lat = sorted(x[2] for x in xs)
    n = len(lat)
    dur = xs[-1][0] - xs[0][0]

    def pct(q):
        return lat[min(n - 1, int(q * n))]
    print(f'{n} round trips in {dur:.2f} s ({n / dur / 1e6:.3f} M/s): p50 {pct(.5):.2f} p99 {pct(.99):.2f} '
          f'p99.9 {pct(.999):.2f} p99.99 {pct(.9999):.2f} us; above 2/5/10/20/50 us: '
          + ' '.join(f'{100 * sum(1 for v in lat if v > t) / n:.3f}%' for t in (2, 5, 10, 20, 50)))

    run = collections.Counter()
    last = {}
    for t, cpu, ev, tr in evs:
        if ev == 'sched:sched_switch':
            m = SWITCH.search(tr)
            if cpu in last:
                run[last[cpu][1]] += t - last[cpu][0]
            last[cpu] = (t, int(m[4]))
    pollers = [tid for tid, _ in run.most_common(4) if tid != 0][:2]

    on = {}
    inter = []
    for t, cpu, ev, tr in evs:
        if ev == 'sched:sched_switch':
            m = SWITCH.search(tr)
            prev, state, ncomm, nxt = int(m[1]), m[2], m[3], int(m[4])
            if prev in pollers and nxt in pollers:
                inter.append((t, 'pollers share a CPU'))
            elif prev in pollers:
                who = 'sockperf-other-thread' if ncomm == 'sockperf' else re.sub(r'[/:-]?\d+.*$', '', ncomm)
                inter.append((t, f'switch to {who} ({state[0]})'))
            on[cpu] = nxt
        elif on.get(cpu) in pollers:
            if ev == 'timer:hrtimer_expire_entry':
                continue
            if ev == 'irq_vectors:local_timer_entry':
                label = 'local timer interrupt'
            elif ev == 'irq:softirq_entry':
                label = 'softirq ' + re.search(r'action=(\w+)', tr)[1]
            elif ev == 'tlb:tlb_flush':
                label = 'TLB flush'
            else:
                label = ev.split(':')[1]
            inter.append((t, label))
    times = [x[0] for x in inter]

    slow = [x for x in xs if x[2] > slow_us]

    def window(s, off):
        i = bisect.bisect_left(times, s[0] + off - 5e-6)
        j = bisect.bisect_right(times, s[1] + off + 2e-6)
        return i, j

    def score(off):
        return sum(1 for s in slow if window(s, off)[0] < window(s, off)[1])
    # Votes: every (interference, slowest round trip) pair proposes the offset that puts the
    # interference at the round trip's start; the true offset collects a vote from nearly every
    # slow round trip, a wrong one only chance pairs. Then refined to 2 us.
    slowest = sorted(slow, key=lambda x: -x[2])[:400]
    votes = collections.Counter(round((p - s[0]) * 1e5) for s in slowest for p in times)
    off = 0.0
    if votes:
        guess = votes.most_common(1)[0][0] / 1e5
        off = max((guess + k * 2e-6 for k in range(-20, 21)), key=score)
    print(f'polling threads {pollers}; clock offset {off:.6f} s; {score(off)} of {len(slow)} round trips '
          f'above {slow_us:g} us ({100 * len(slow) / n:.3f}%) have an interference in them')

    causes = collections.Counter()
    lats = collections.defaultdict(list)
    for s in slow:
        i, j = window(s, off)
        k = ' + '.join(sorted({inter[m][1] for m in range(i, j)})) or 'nothing seen'
        causes[k] += 1
        lats[k].append(s[2])
    print('share of all round trips  count  median us  cause')
    for k, v in causes.most_common(14):
        ls = sorted(lats[k])
        print(f'  {100 * v / n:8.4f}%  {v:7d}  {ls[len(ls) // 2]:8.1f}  {k}')
    a, b = xs[0][0] + off, xs[-1][0] + off
    rate = collections.Counter(x[1] for x in inter if a <= x[0] <= b)
    print('interferences on the polling CPUs per second: '
          + ', '.join(f'{k} {v / dur:.0f}' for k, v in rate.most_common(12)))
    print('per second per CPU: ' + counters(base, dur + 0.5))


if __name__ == '__main__':
    main()

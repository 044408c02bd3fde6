"""Multicast fan-out like a market-data feed: one publisher, N subscriber processes, kernel vs goxio.

    fanout.py --fanout BIN/fanout --lib LIBGOXIO [--env "VAR=value ..."] [--subs 8]
              [--seconds 1] [--ipv6] [--out FILE.md]

Run it in a network namespace of its own (run.sh does: `unshare --net`), where it turns on the
multicast flag of lo (group 239.7.7.7 on lo), or with --ipv6 makes a veth interface gx0 (the
kernel loops IPv6 multicast back on an ordinary interface, never on lo) and uses the
interface-local group ff01::7:7 on it (it never leaves the host, as 127/8's never leave lo). For each variant (kernel: no library; goxio: publisher and subscribers under
the library) it finds the highest rate at which every subscriber receives every datagram (doubling
from 25,000 messages/s until a loss, then three bisection steps), and prints per variant that
loss-free rate, what each subscriber received at it, and the losses at the first lossy rate tried.
Each trial sends for --seconds seconds; every process is bounded in time.
"""

import argparse
import re
import subprocess
import time

import drivers

GROUP = "239.7.7.7"
GROUP6, IFNAME6 = "ff01::7:7", "gx0"
SUB = re.compile(r"received=(\d+) lost=(\d+) reordered=(\d+)")
PUB = re.compile(r"sent=(\d+) seconds=([0-9.]+) rate=([0-9.]+)")



def trial(args, lib, rate, port):
    """Sends rate*seconds datagrams to --subs subscribers; returns (sent, pub rate, [received], [lost])."""
    count = max(1000, int(rate * args.seconds))
    env = drivers.env_with(lib, args.env)
    group, iface = (GROUP6, [IFNAME6]) if args.ipv6 else (GROUP, [])
    subs = [subprocess.Popen([args.fanout, "sub", group, str(port), str(int(args.seconds) + 10)] + iface, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(args.subs)]
    try:
        for s in subs:
            if s.stdout.readline().strip() != "ready":
                raise RuntimeError("subscriber did not start: %s" % s.stderr.read()[-300:])
        time.sleep(0.1)
        pub = subprocess.run([args.fanout, "pub", group, str(port), str(rate), str(count)] + iface, env=env,
                             capture_output=True, text=True, timeout=args.seconds * 10 + 30)
        m = PUB.search(pub.stdout)
        if pub.returncode != 0 or not m:
            raise RuntimeError("publisher failed: %s" % pub.stderr.strip()[-300:])
        received, lost = [], []
        for s in subs:
            out, err = s.communicate(timeout=args.seconds + 20)
            sm = SUB.search(out)
            if not sm:
                raise RuntimeError("subscriber failed: %s" % err.strip()[-300:])
            received.append(int(sm.group(1)))
            lost.append(count - int(sm.group(1)))
        return count, float(m.group(3)), received, lost
    finally:
        for s in subs:
            if s.poll() is None:
                s.kill()
                s.wait()


def search(args, lib, port):
    """The highest loss-free rate found, its trial, and the first lossy trial."""
    best, best_trial, lossy = 0, None, None
    rate = 25000
    lo, hi = 0, None
    while hi is None and rate <= 50_000_000:
        port += 1
        t = trial(args, lib, rate, port)
        if sum(t[3]) == 0 and t[1] >= rate * 0.9:
            lo, best, best_trial = rate, rate, t
            rate *= 2
        else:
            hi, lossy = rate, t
    if hi is not None:
        for _ in range(3):
            mid = (lo + hi) // 2
            port += 1
            t = trial(args, lib, mid, port)
            if sum(t[3]) == 0 and t[1] >= mid * 0.9:
                lo, best, best_trial = mid, mid, t
            else:
                hi = mid
    return best, best_trial, lossy, port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fanout", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--env", default="")
    ap.add_argument("--subs", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--port", type=int, default=17700)
    ap.add_argument("--ipv6", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    subprocess.run(["ip", "link", "set", "lo", "multicast", "on"], check=False)
    if args.ipv6:
        for cmd in (["ip", "link", "add", IFNAME6, "type", "veth", "peer", "name", "gx1"],
                    ["sysctl", "-qw", "net.ipv6.conf.%s.addr_gen_mode=1" % IFNAME6],
                    ["ip", "link", "set", IFNAME6, "up"],
                    ["ip", "addr", "add", "fd00::1/64", "dev", IFNAME6, "nodad"]):
            subprocess.run(cmd, check=True)

    port = args.port
    lines = ["| variant | loss-free rate (msg/s) | received per subscriber at it (min) | first lossy rate: lost per subscriber (max) |",
             "| --- | --- | --- | --- |"]
    rates = {}
    for name, lib in (("kernel", ""), ("goxio", args.lib)):
        best, bt, lossy, port = search(args, lib, port + 10)
        rates[name] = best
        recv = "%d of %d" % (min(bt[2]), bt[0]) if bt else "-"
        lost = "%d of %d" % (max(lossy[3]), lossy[0]) if lossy else "none up to the search's limit"
        lines.append("| %s | %d | %s | %s |" % (name, best, recv, lost))
    ratio = rates["goxio"] / rates["kernel"] if rates["kernel"] else float("nan")
    what = "IPv6 group %s on a veth interface" % GROUP6 if args.ipv6 else "IPv4 group %s on lo" % GROUP
    text = "\n".join(lines) + "\n\n%s, %d subscribers, 64 B datagrams, %.1f s per trial; loss-free rate goxio/kernel: %.2fx (goal >= 5x).\n" % (
        what, args.subs, args.seconds, ratio)
    drivers.emit(text, args.out)


if __name__ == "__main__":
    drivers.run(main, "fanout.py")

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// Acceptance tests of IPv6 UDP over the AF_XDP transport: the xdp tests' namespaces and veth
// pair get IPv6 addresses (fd00:203:N::1 and ::2, and link-local fe80::a:1 and fe80::b:2, all
// nodad); real programs (tests/xdp/xdpudp.py) with the library exchange IPv6 datagrams with
// programs without it, and what a receiver reports (datagrams, source addresses with their scope
// ids, hop limits, traffic classes, flow labels) is compared with the same run on the kernel.

// v6 is the topology's IPv6 addressing: global and link-local addresses of each end.
type v6 struct {
	a, b     string // fd00:203:N::1, ::2
	llA, llB string // fe80::a:1, fe80::b:2
}

// addIPv6 gives both veth ends their IPv6 addresses and makes each know the other's MAC for
// them (the first datagrams of a burst would otherwise wait for neighbour discovery).
func (tp *xdpTopo) addIPv6(t *testing.T) v6 {
	t.Helper()
	n := strings.Split(tp.addrA, ".")[2]
	a := v6{a: "fd00:203:" + n + "::1", b: "fd00:203:" + n + "::2", llA: "fe80::a:1", llB: "fe80::b:2"}
	ipCmd(t, "-n", tp.nsA, "addr", "add", a.a+"/64", "dev", tp.ifA, "nodad")
	ipCmd(t, "-n", tp.nsB, "addr", "add", a.b+"/64", "dev", tp.ifB, "nodad")
	ipCmd(t, "-n", tp.nsA, "addr", "add", a.llA+"/64", "dev", tp.ifA, "nodad")
	ipCmd(t, "-n", tp.nsB, "addr", "add", a.llB+"/64", "dev", tp.ifB, "nodad")
	for _, e := range []struct{ ns, ifn, peer, mac string }{
		{tp.nsA, tp.ifA, a.b, tp.mac(t, tp.nsB)}, {tp.nsA, tp.ifA, a.llB, tp.mac(t, tp.nsB)},
		{tp.nsB, tp.ifB, a.a, tp.mac(t, tp.nsA)}, {tp.nsB, tp.ifB, a.llA, tp.mac(t, tp.nsA)},
	} {
		ipCmd(t, "-n", e.ns, "-6", "neigh", "replace", e.peer, "lladdr", e.mac, "dev", e.ifn, "nud", "reachable")
	}
	return a
}

// TestXDPIPv6: IPv6 datagrams between a program with the library and one without, both ways,
// and between two goxio programs; every datagram arrives once, intact and in order, through the
// AF_XDP rings of the goxio ends; a kernel receiver sees the goxio sender's datagrams with the
// kernel's hop limit, traffic class and flow labelling.
func TestXDPIPv6(t *testing.T) {
	h := newXDPHarness(t, 1)
	tp := h.tp
	tp.resolve(t)
	a := tp.addIPv6(t)
	const n = 400
	ns := strconv.Itoa(n)

	// sendTo runs a sender (goxio or kernel) in A to a kernel receiver with --meta in B and
	// returns the receiver's meta and summary lines and the sender's totals.
	sendTo := func(t *testing.T, g goxio, port int, txArgs ...string) (meta string, r rxResult, tot udpTotals) {
		rx := h.py("kernel rx", tp.nsB, kernelOnly, nil, "rx", fmt.Sprintf("[%s]:%d", a.b, port), "-n", ns, "--meta")
		rx.expect("ready", xdpWait)
		tx := h.py("tx", tp.nsA, g, nil, append([]string{"tx", fmt.Sprintf("[%s]:%d", a.b, port), "-n", ns, "--wait"}, txArgs...)...)
		tx.expect("sent", xdpWait)
		meta = rx.expect("meta ", xdpWait)
		r = rxDone(t, rx, xdpWait)
		if g {
			tot, _ = h.udpOf(tx.pid())
		}
		tx.exit(xdpWait)
		return meta, r, tot
	}

	t.Run("goxio-to-kernel", func(t *testing.T) {
		h.t = t
		for i, opts := range [][]string{nil, {"--hops", "9", "--tclass", "40"}, {"--flows", "3"}} {
			kMeta, kr, _ := sendTo(t, kernelOnly, 7200+2*i, opts...)
			gMeta, gr, tot := sendTo(t, underGoxio, 7201+2*i, opts...)
			requireAll(t, "kernel to kernel", kr, n, true)
			requireAll(t, "goxio to kernel", gr, n, true)
			if kMeta != gMeta {
				t.Errorf("options %v: the kernel receiver saw\n%s\nfrom a kernel sender, and\n%s\nfrom a goxio sender", opts, kMeta, gMeta)
			}
			if tot.TxPackets != n || tot.TxOSPackets != 0 {
				t.Errorf("options %v: goxio sender: %d datagrams through the ring, %d through the kernel, want all %d through the ring (%v)",
					opts, tot.TxPackets, tot.TxOSPackets, n, tot.transports)
			}
			t.Logf("options %v: %s", opts, gMeta)
		}
	})

	t.Run("kernel-to-goxio", func(t *testing.T) {
		h.t = t
		rx := h.py("goxio rx", tp.nsA, underGoxio, nil, "rx", fmt.Sprintf("[%s]:7210", a.a), "-n", ns, "--wait")
		rx.expect("ready", xdpWait)
		tx := h.py("kernel tx", tp.nsB, kernelOnly, nil, "tx", fmt.Sprintf("[%s]:7210", a.a), "-n", ns, "--sport", "7211")
		tx.expect("sent", xdpWait)
		r := rxDone(t, rx, xdpWait)
		requireAll(t, "kernel to goxio", r, n, true)
		if want := fmt.Sprintf("[%s]:7211/0", a.b); r.from != want {
			t.Errorf("goxio receiver: sources %s, want %s", r.from, want)
		}
		tot, proc := h.udpOf(rx.pid())
		if tot.RxPackets != n || tot.RxOSPackets != 0 || !strings.HasPrefix(tot.transports[0], "xdp") {
			t.Errorf("goxio receiver: %d datagrams from the ring, %d from the kernel, want all %d from the ring (%v)",
				tot.RxPackets, tot.RxOSPackets, n, tot.transports)
		}
		if ringRx, _, rings := xdpRings(proc); rings != 1 || ringRx != n {
			t.Errorf("goxio receiver: %d AF_XDP rings, %d frames received on them, want 1 ring with %d", rings, ringRx, n)
		}
		rx.exit(xdpWait)
	})

	// A dual-stack receiver bound to [::] gets datagrams from an IPv4 sender (v4-mapped
	// source), an IPv6 one and a link-local one (scope id of the receiving interface): the
	// same sources as the kernel reports, the datagrams through the ring.
	t.Run("dual-stack-receiver", func(t *testing.T) {
		h.t = t
		senders := [][]string{
			{"tx", tp.addrA + ":", "--sport", "7221", "--id", "0"},
			{"tx", "[" + a.a + "]:", "--sport", "7222", "--id", "1"},
			{"tx", "[" + a.llA + "%" + tp.ifB + "]:", "--bind", a.llB + "%" + tp.ifB, "--sport", "7223", "--id", "2"},
		}
		run := func(g goxio, port int) (rxResult, udpTotals) {
			rx := h.py("rx", tp.nsA, g, nil, "rx", fmt.Sprintf("[::]:%d", port), "-n", strconv.Itoa(3*n), "--v6only", "0", "--wait")
			rx.expect("ready", xdpWait)
			for _, s := range senders {
				args := append([]string{s[0], s[1] + strconv.Itoa(port), "-n", ns}, s[2:]...)
				tx := h.py("kernel tx", tp.nsB, kernelOnly, nil, args...)
				tx.expect("sent", xdpWait)
			}
			r := rxDone(t, rx, xdpWait)
			var tot udpTotals
			if g {
				tot, _ = h.udpOf(rx.pid())
			}
			rx.exit(xdpWait)
			return r, tot
		}
		kr, _ := run(kernelOnly, 7220)
		gr, tot := run(underGoxio, 7220)
		requireAll(t, "kernel dual-stack receiver", kr, 3*n, false)
		requireAll(t, "goxio dual-stack receiver", gr, 3*n, false)
		if kr.from != gr.from {
			t.Errorf("sources: kernel %s, goxio %s", kr.from, gr.from)
		}
		if !strings.Contains(gr.from, "[::ffff:"+tp.addrB+"]:7221/0") || !strings.Contains(gr.from, "["+a.llB+"]:7223/") ||
			strings.Contains(gr.from, "["+a.llB+"]:7223/0") {
			t.Errorf("sources %s: want a v4-mapped one and a link-local one with its interface's scope id", gr.from)
		}
		if tot.RxPackets != 3*n || tot.RxOSPackets != 0 {
			t.Errorf("goxio receiver: %d datagrams from the ring, %d from the kernel, want all %d from the ring (%v)",
				tot.RxPackets, tot.RxOSPackets, 3*n, tot.transports)
		}
		t.Logf("sources: %s", gr.from)
	})

	// A dual-stack goxio sender sends to a v4-mapped destination: IPv4 through the ring.
	t.Run("dual-stack-sender-to-ipv4", func(t *testing.T) {
		h.t = t
		rx := h.py("kernel rx", tp.nsB, kernelOnly, nil, "rx", tp.addrB+":7230", "-n", ns)
		rx.expect("ready", xdpWait)
		tx := h.py("goxio tx", tp.nsA, underGoxio, nil, "tx", "[::ffff:"+tp.addrB+"]:7230", "-n", ns, "--sport", "7231", "--wait")
		tx.expect("sent", xdpWait)
		r := rxDone(t, rx, xdpWait)
		requireAll(t, "goxio dual-stack to IPv4 kernel", r, n, true)
		if want := tp.addrA + ":7231"; r.from != want {
			t.Errorf("kernel receiver: sources %s, want %s", r.from, want)
		}
		tot, _ := h.udpOf(tx.pid())
		if tot.TxPackets != n || tot.TxOSPackets != 0 {
			t.Errorf("goxio sender: %d through the ring, %d through the kernel, want all %d through the ring (%v)",
				tot.TxPackets, tot.TxOSPackets, n, tot.transports)
		}
		tx.exit(xdpWait)
	})

	// A goxio sender reaches a link-local peer through its ring (the scope id names the
	// interface); the kernel receiver sees the same source, with its own scope id, as from a
	// kernel sender.
	t.Run("link-local", func(t *testing.T) {
		h.t = t
		run := func(g goxio, port int) (rxResult, udpTotals) {
			rx := h.py("kernel rx", tp.nsB, kernelOnly, nil, "rx", fmt.Sprintf("[::]:%d", port), "-n", ns)
			rx.expect("ready", xdpWait)
			tx := h.py("tx", tp.nsA, g, nil, "tx", fmt.Sprintf("[%s%%%s]:%d", a.llB, tp.ifA, port), "-n", ns,
				"--bind", a.llA+"%"+tp.ifA, "--sport", "7281", "--wait")
			tx.expect("sent", xdpWait)
			r := rxDone(t, rx, xdpWait)
			var tot udpTotals
			if g {
				tot, _ = h.udpOf(tx.pid())
			}
			tx.exit(xdpWait)
			return r, tot
		}
		kr, _ := run(kernelOnly, 7280)
		gr, tot := run(underGoxio, 7282)
		requireAll(t, "kernel to a link-local kernel peer", kr, n, true)
		requireAll(t, "goxio to a link-local kernel peer", gr, n, true)
		if kr.from != gr.from || !strings.HasPrefix(gr.from, "["+a.llA+"]:7281/") {
			t.Errorf("sources: kernel sender %s, goxio sender %s", kr.from, gr.from)
		}
		if tot.TxPackets != n || tot.TxOSPackets != 0 {
			t.Errorf("goxio sender: %d datagrams through the ring, %d through the kernel, want all %d through the ring (%v)",
				tot.TxPackets, tot.TxOSPackets, n, tot.transports)
		}
	})

	// Datagrams larger than the path MTU: the kernel fragments a goxio sender's, and the
	// steering program leaves fragments (IPv6 fragment headers) to the kernel, which
	// reassembles them for the goxio receiver's kernel socket.
	t.Run("fragments", func(t *testing.T) {
		h.t = t
		const m, big = 100, "2000"
		rx := h.py("goxio rx", tp.nsA, underGoxio, nil, "rx", "[::]:7300", "-n", strconv.Itoa(m), "--big", big, "--wait")
		rx.expect("ready", xdpWait)
		tx := h.py("goxio tx", tp.nsB, underGoxio, nil, "tx", "["+a.a+"]:7300", "-n", strconv.Itoa(m), "--big", big, "--wait")
		tx.expect("sent", xdpWait)
		requireAll(t, "fragmented datagrams", rxDone(t, rx, xdpWait), m, true)
		rtot, _ := h.udpOf(rx.pid())
		ttot, _ := h.udpOf(tx.pid())
		if rtot.RxOSPackets != m || rtot.RxPackets != 0 || ttot.TxOSPackets != m || ttot.TxPackets != 0 ||
			rtot.TxPackets == 0 || ttot.RxPackets != rtot.TxPackets {
			t.Errorf("receiver: %d from the kernel, %d from the ring, %d acknowledgements through the ring; sender: %d through the kernel, %d through the ring, %d acknowledgements from the ring; want every datagram through the kernel, the acknowledgements through the rings",
				rtot.RxOSPackets, rtot.RxPackets, rtot.TxPackets, ttot.TxOSPackets, ttot.TxPackets, ttot.RxPackets)
		}
		rx.exit(xdpWait)
		tx.exit(xdpWait)
	})

	// With no neighbour entry for the peer, the first datagrams go through the kernel, which
	// resolves it with neighbour discovery; the rest through the ring; none is lost.
	t.Run("first-send-resolves-neighbour", func(t *testing.T) {
		h.t = t
		ipCmd(t, "-n", tp.nsA, "-6", "neigh", "flush", "dev", tp.ifA)
		if out := ipCmd(t, "-n", tp.nsA, "-6", "neigh", "show", a.b, "dev", tp.ifA); strings.Contains(out, "lladdr") {
			t.Fatalf("neighbour entry left after the flush: %s", out)
		}
		const m = 200
		rx := h.py("kernel rx", tp.nsB, kernelOnly, nil, "rx", fmt.Sprintf("[%s]:7250", a.b), "-n", strconv.Itoa(m))
		rx.expect("ready", xdpWait)
		tx := h.py("goxio tx", tp.nsA, underGoxio, nil, "tx", fmt.Sprintf("[%s]:7250", a.b), "-n", strconv.Itoa(m),
			"--window", "1", "--pause", "1", "--wait")
		tx.expect("sent", xdpWait)
		requireAll(t, "first sends", rxDone(t, rx, xdpWait), m, true)
		tot, _ := h.udpOf(tx.pid())
		if tot.TxOSPackets == 0 || tot.TxPackets == 0 || tot.TxPackets+tot.TxOSPackets != m {
			t.Errorf("sender: %d through the kernel, %d through the ring: want the first ones through the kernel (neighbour discovery), the rest through the ring, %d in all",
				tot.TxOSPackets, tot.TxPackets, m)
		}
		neigh := ipCmd(t, "-n", tp.nsA, "-6", "neigh", "show", a.b, "dev", tp.ifA)
		if !strings.Contains(neigh, "lladdr") {
			t.Errorf("the peer's MAC was not resolved: %q", neigh)
		}
		t.Logf("first sends: %d through the kernel, then %d through the ring; %s", tot.TxOSPackets, tot.TxPackets, strings.TrimSpace(neigh))
		tx.exit(xdpWait)
	})

	// A fork hands what the AF_XDP socket queued to the child and the parent, with the names a
	// receive gives an AF_INET6 socket (a v4-mapped IPv4 sender too).
	t.Run("fork", func(t *testing.T) {
		h.t = t
		const m = 40
		rx := h.py("goxio forkrx", tp.nsA, underGoxio, nil, "forkrx", "[::]:7260")
		rx.expect("ready", xdpWait)
		for i, dst := range []string{"[" + a.a + "]:7260", tp.addrA + ":7260"} {
			tx := h.py("kernel tx", tp.nsB, kernelOnly, nil, "tx", dst, "-n", strconv.Itoa(m/2), "--id", strconv.Itoa(i),
				"--sport", strconv.Itoa(7261+i), "--window", "100", "--pause", "0")
			tx.expect("sent", xdpWait)
		}
		time.Sleep(200 * time.Millisecond) // on the RX ring by now
		if s := processSockets(h.stats(rx.pid()), rx.pid()); len(s) != 1 || s[0].Transport != stats.TransportXDP {
			t.Fatalf("before the fork: %+v, want one xdp socket", s)
		}
		rx.say("go")
		var c, cb, p, pb, dup int
		var cfrom, pfrom string
		if _, err := fmt.Sscanf(rx.expect("child got", xdpWait), "child got %d bad %d from %s", &c, &cb, &cfrom); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Sscanf(rx.expect("parent got", xdpWait), "parent got %d bad %d dup %d from %s", &p, &pb, &dup, &pfrom); err != nil && p != 0 {
			t.Fatal(err)
		}
		if c+p != m || cb+pb != 0 || dup != 0 || c == 0 {
			t.Errorf("child got %d, parent %d (bad %d, %d both), want %d in all, each once, the child first", c, p, cb+pb, dup, m)
		}
		want := fmt.Sprintf("[::ffff:%s]:7262/0,[%s]:7261/0", tp.addrB, a.b)
		if cfrom != want || pfrom != "" && pfrom != want {
			t.Errorf("sources after the fork: child %s, parent %s; want %s", cfrom, pfrom, want)
		}
		rx.wait(xdpWait)
	})

	// With shared memory on too, an IPv6 receiver on ::1 takes shared memory and a sender to the
	// veth peer (dual-stack or IPv6) AF_XDP.
	t.Run("with-shm", func(t *testing.T) {
		h.t = t
		dir, err := os.MkdirTemp("/dev/shm", "goxio-xdptest-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		both := []string{"GOXIO_SHM=1", "GOXIO_SHM_DIR=" + dir}
		local := h.py("loopback rx", tp.nsA, underGoxio, both, "rx", "[::1]:7291", "-n", "1", "--idle", "100", "--wait")
		local.expect("got", xdpWait)
		for i, dst := range []string{"[" + a.b + "]:7292", "[::ffff:" + tp.addrB + "]:7293"} {
			listen := "[::]:" + dst[strings.LastIndex(dst, ":")+1:]
			rx := h.py("kernel rx", tp.nsB, kernelOnly, nil, "rx", listen, "-n", "100")
			rx.expect("ready", xdpWait)
			tx := h.py("goxio tx", tp.nsA, underGoxio, both, "tx", dst, "-n", "100", "--wait")
			tx.expect("sent", xdpWait)
			requireAll(t, "to the veth peer", rxDone(t, rx, xdpWait), 100, true)
			if tt, _ := h.udpOf(tx.pid()); len(tt.transports) != 1 || tt.transports[0] != "xdp/none" || tt.TxPackets != 100 {
				t.Errorf("sender %d to %s: transports %v, %d through the ring, want xdp", i, dst, tt.transports, tt.TxPackets)
			}
			tx.exit(xdpWait)
		}
		if lt, _ := h.udpOf(local.pid()); len(lt.transports) != 1 || lt.transports[0] != "shm/none" {
			t.Errorf("loopback receiver: transports %v, want shm", lt.transports)
		}
		local.exit(xdpWait)
	})

	t.Run("goxio-to-goxio", func(t *testing.T) {
		h.t = t
		echo := h.py("goxio echo", tp.nsB, underGoxio, nil, "echo", fmt.Sprintf("[%s]:7240", a.b), "-n", "0")
		echo.expect("ready", xdpWait)
		ping := h.py("goxio ping", tp.nsA, underGoxio, nil, "ping", fmt.Sprintf("[%s]:7240", a.b), "-n", ns, "--wait")
		if l := ping.expect("ping ok", xdpWait); l != fmt.Sprintf("ping ok %d bad 0 lost 0", n) {
			t.Errorf("ping: %s", l)
		}
		etot, _ := h.udpOf(echo.pid())
		ptot, _ := h.udpOf(ping.pid())
		if etot.RxPackets != n || etot.TxPackets != n || ptot.RxPackets != n || ptot.TxPackets != n {
			t.Errorf("echo: %d in, %d out through the rings (%d, %d kernel); ping: %d in, %d out (%d, %d kernel); want %d each",
				etot.RxPackets, etot.TxPackets, etot.RxOSPackets, etot.TxOSPackets,
				ptot.RxPackets, ptot.TxPackets, ptot.RxOSPackets, ptot.TxOSPackets, n)
		}
		ping.exit(xdpWait)
	})
}

// TestCaptureXDPIPv6: goxio capture of a dual-stack process whose UDP socket is served by AF_XDP
// records the IPv6 frames of its RX ring (the data it receives) and TX ring (the
// acknowledgements it sends) as tcpdump on the peer's end of the veth pair sees them on the wire.
func TestCaptureXDPIPv6(t *testing.T) {
	h := newXDPHarness(t, 1)
	tp := h.tp
	tp.resolve(t)
	a := tp.addIPv6(t)
	const n, port = 200, 7270
	dir := t.TempDir()
	wire, mine := filepath.Join(dir, "wire.pcap"), filepath.Join(dir, "goxio.pcap")
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Fatal(err)
	}
	filter := "ip6 and udp port " + strconv.Itoa(port)
	td := startBG(t, testutil.Env(""), ip, "netns", "exec", tp.nsB, testutil.Program(t, "tcpdump", "tcpdump"),
		"-i", tp.ifOf(tp.nsB), "-U", "-Z", "root", "-s", "65600", "-B", "32768", "-w", wire, filter)
	td.waitStderr(t, "listening on", 10*time.Second)

	rx := h.py("goxio rx", tp.nsA, underGoxio, nil, "rx", "[::]:"+strconv.Itoa(port), "-n", strconv.Itoa(n), "--wait")
	rx.expect("ready", xdpWait)
	c := startBG(t, testutil.Env(""), testutil.Tool(t, "goxio"), "capture", "-k", h.statsDir, "-p", strconv.Itoa(rx.pid()), "-w", mine, filter)
	c.waitStderr(t, "goxio capture: attached to", 10*time.Second)
	tx := h.py("kernel tx", tp.nsB, kernelOnly, nil, "tx", "["+a.a+"]:"+strconv.Itoa(port), "-n", strconv.Itoa(n))
	tx.expect("sent", xdpWait)
	requireAll(t, "kernel to goxio", rxDone(t, rx, xdpWait), n, true)
	tot, proc := h.udpOf(rx.pid())
	ringRx, ringTx, _ := xdpRings(proc)
	c.stop(t)
	td.stopTcpdump(t)
	rx.exit(xdpWait)

	want, got := readPcap(t, wire), readPcap(t, mine)
	if tot.RxPackets != n || ringRx != n || ringTx == 0 {
		t.Fatalf("goxio receiver: %d datagrams from the ring (%d frames on the RX ring, %d sent on the TX ring), want %d and acknowledgements",
			tot.RxPackets, ringRx, ringTx, n)
	}
	toRx := 0
	for _, p := range want {
		if p.Dst.Port() == port && p.Dst.Addr().Is6() {
			toRx++
		}
	}
	if toRx != n {
		t.Fatalf("tcpdump on the wire saw %d IPv6 datagrams to port %d, want %d", toRx, port, n)
	}
	if d := sameUDP(want, got); d != "" {
		t.Fatalf("goxio capture (%d packets) differs from the wire (%d packets): %s", len(got), len(want), d)
	}
	t.Logf("%d packets on the wire and in goxio capture (%d received on the RX ring, %d frames sent on the TX ring)",
		len(want), ringRx, ringTx)
	tsharkClean(t, mine)
}

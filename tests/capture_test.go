package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

func itoa(n int) string { return strconv.Itoa(n) }

// goxio capture (issue 18): the same traffic under tcpdump -i lo with the fast paths off and
// under goxio capture with them on gives the same packets.

const captureRound = 60 // datagrams in one round of capgen udp

// kernelRound runs one round of capgen udp without goxio under tcpdump -i lo (udp only).
func kernelRound(t *testing.T, h *shmHarness, gen, file string) []wirePacket {
	td := startTcpdump(t, file, "udp")
	p := h.start("capgen", testutil.Env(""), nil, gen, "udp", itoa(captureRound))
	p.expect("ready", 10*time.Second)
	p.say("go")
	p.expect("done "+itoa(captureRound)+" bad 0", 20*time.Second)
	p.exit(10 * time.Second)
	td.stopTcpdump(t)
	return readPcap(t, file)
}

func TestCaptureUDPSameAsTcpdump(t *testing.T) {
	if captureNet(t) {
		return
	}
	h := newShmHarness(t)
	gen := capgen(t, h)
	dir := t.TempDir()
	want := kernelRound(t, h, gen, dir+"/kernel.pcap")
	if len(want) != captureRound {
		t.Fatalf("tcpdump saw %d datagrams, want %d", len(want), captureRound)
	}
	p := h.start("capgen", h.env(), nil, gen, "udp", itoa(captureRound))
	p.expect("ready", 10*time.Second)
	for _, format := range []string{"pcap", "pcapng"} {
		file := dir + "/goxio." + format
		args := []string{"-p", itoa(p.pid()), "-w", file}
		if format == "pcapng" {
			args = append(args, "--pcapng")
		}
		c := startCapture(t, h, append(args, "udp")...)
		lo := startTcpdump(t, file+".lo", "udp and not ip multicast") // the kernel sees no unicast datagram
		p.say("go")
		p.expect("done "+itoa(captureRound)+" bad 0", 20*time.Second)
		c.stop(t)
		lo.stopTcpdump(t)
		if k := readPcap(t, file+".lo"); len(k) != 0 {
			t.Fatalf("%d unicast datagrams went through the kernel, want none (offloaded): %v", len(k), k[0])
		}
		got := readPcap(t, file)
		if d := sameUDP(want, got); d != "" {
			t.Fatalf("%s: %s", format, d)
		}
		tsharkClean(t, file)
		if format == "pcapng" && (len(got) == 0 || got[0].Comment == "") {
			t.Fatalf("pcapng packets carry no comment: %+v", got[0])
		}
	}
	p.exit(10 * time.Second)
}

// captureExprs are tcpdump expressions (pcap-filter(7)) over capgen udp's traffic: 127.0.0.1:8001
// and :8002 to 127.0.0.1:9001-9003 and 127.0.0.2:9003, 127.0.0.1:8003 to 239.1.2.3:9100,
// payloads of 0 to 1472 bytes.
var captureExprs = []string{
	"udp",
	"host 127.0.0.2",
	"dst host 127.0.0.2",
	"src host 127.0.0.1",
	"net 127.0.0.0/8",
	"dst net 239.0.0.0/8",
	"port 9001",
	"dst port 9002",
	"src port 8002",
	"portrange 9001-9002",
	"udp dst portrange 9002-9100",
	"len > 500",
	"greater 1000",
	"less 200",
	"len <= 100",
	"ip multicast",
	"multicast",
	"broadcast",
	"dst host 255.255.255.255",
	"udp[8] & 1 = 1",
	"udp[4:2] > 300",
	"ip[8] = 1",
	"ip[6] & 0x40 != 0",
	"ip[2:2] < 100",
	"tcp",
	"tcp[tcpflags] & tcp-syn != 0",
	"port 9001 or port 9003",
	"port 9003 and not dst host 127.0.0.2",
	"(src port 8001 and dst port 9002) or (src port 8002 and dst port 9001)",
	"not udp dst port 9100",
	"dst host 239.1.2.3 and len > 300",
	"ip proto 17",
	"icmp",
	"udp[8:2] = 0x1f26 or udp[9] = 0x7",
	"ether dst 00:00:00:00:00:00 and udp",
}

// TestCaptureExpressions: each expression selects the same datagrams under goxio capture (in
// the process, with the fast path on) as tcpdump selects from the kernel's loopback traffic.
func TestCaptureExpressions(t *testing.T) {
	if captureNet(t) {
		return
	}
	h := newShmHarness(t)
	gen := capgen(t, h)
	dir := t.TempDir()
	all := kernelRound(t, h, gen, dir+"/kernel.pcap")
	if len(all) != captureRound {
		t.Fatalf("tcpdump saw %d datagrams, want %d", len(all), captureRound)
	}
	p := h.start("capgen", h.env(), nil, gen, "udp", itoa(captureRound))
	p.expect("ready", 10*time.Second)
	some := 0
	for i, expr := range captureExprs {
		kfile, gfile := fmt.Sprintf("%s/k%d.pcap", dir, i), fmt.Sprintf("%s/g%d.pcap", dir, i)
		// tcpdump's selection: its filter over the kernel's packets (the same program a live
		// tcpdump with the expression would run on them).
		r := testutil.Run(exec.Command(testutil.Program(t, "tcpdump", "tcpdump"), "-r", dir+"/kernel.pcap", "-w", kfile, expr), 20*time.Second)
		if r.ExitCode != 0 {
			t.Fatalf("tcpdump %q: %s", expr, r)
		}
		want := readPcap(t, kfile)
		c := startCapture(t, h, "-p", itoa(p.pid()), "-w", gfile, expr)
		p.say("go")
		p.expect("done "+itoa(captureRound)+" bad 0", 20*time.Second)
		c.stop(t)
		got := readPcap(t, gfile)
		if d := sameUDP(want, got); d != "" || len(got) != len(want) {
			t.Fatalf("%q: goxio capture %d packets, tcpdump %d: %s", expr, len(got), len(want), d)
		}
		if len(want) > 0 && len(want) < captureRound {
			some++
		}
		t.Logf("%-70q %2d of %d", expr, len(got), captureRound)
	}
	if some < 20 {
		t.Fatalf("only %d expressions select some but not all datagrams: the table tests too little", some)
	}
	p.exit(10 * time.Second)
}

// round makes capgen send one round while a capture runs.
func round(t *testing.T, p *shmProc) {
	t.Helper()
	p.say("go")
	p.expect("done "+itoa(captureRound)+" bad 0", 20*time.Second)
}

// firstIndex is the index of the first packet f accepts.
func firstIndex(t *testing.T, pkts []wirePacket, f func(wirePacket) bool) int {
	t.Helper()
	for i, p := range pkts {
		if f(p) {
			return i
		}
	}
	t.Fatal("no packet matches")
	return -1
}

// TestCaptureOptions: -c, -s, --trigger, --pre, --stop, --split and -C/-G rotation, with exact
// counts against the kernel's reference round.
func TestCaptureOptions(t *testing.T) {
	if captureNet(t) {
		return
	}
	h := newShmHarness(t)
	gen := capgen(t, h)
	dir := t.TempDir()
	all := kernelRound(t, h, gen, dir+"/kernel.pcap")
	if len(all) != captureRound {
		t.Fatalf("tcpdump saw %d datagrams, want %d", len(all), captureRound)
	}
	p := h.start("capgen", h.env(), nil, gen, "udp", itoa(captureRound))
	p.expect("ready", 10*time.Second)
	pid := itoa(p.pid())
	const trigger, stop = "dst port 9003 and len > 600", "dst port 9100 and len > 1000"
	ti := firstIndex(t, all, func(w wirePacket) bool { return w.Dst.Port() == 9003 && w.OrigLen > 600 })
	si := firstIndex(t, all, func(w wirePacket) bool { return w.Dst.Port() == 9100 && w.OrigLen > 1000 })
	if ti < 3 || si <= ti {
		t.Fatalf("trigger at %d, stop at %d: the round does not test them", ti, si)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []wirePacket
		self bool // the tool ends by itself
	}{
		{"count", []string{"-c", "7"}, all[:7], true},
		{"trigger", []string{"--trigger", trigger}, all[ti:], false},
		{"pre", []string{"--trigger", trigger, "--pre", "3"}, all[ti-3:], false},
		{"stop", []string{"--stop", stop}, all[:si+1], true},
		{"trigger-stop", []string{"--trigger", trigger, "--stop", stop}, all[ti : si+1], true},
		{"trigger-filter", []string{"--trigger", trigger, "port 9001"}, filter(all[ti:], func(w wirePacket) bool { return w.Dst.Port() == 9001 }), false},
	} {
		file := dir + "/" + tc.name + ".pcap"
		c := startCapture(t, h, append([]string{"-p", pid, "-w", file}, tc.args...)...)
		round(t, p)
		if tc.self {
			c.wait(t)
		} else {
			c.stop(t)
		}
		got := readPcap(t, file)
		if d := sameUDP(tc.want, got); d != "" || len(got) != len(tc.want) {
			t.Fatalf("%s: %d packets, want %d: %s", tc.name, len(got), len(tc.want), d)
		}
	}

	// -w -: a stream tshark reads as it comes.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ts := exec.Command(testutil.Program(t, "tshark", "tshark"), "-r", "-", "-T", "fields", "-e", "udp.dstport", "-e", "udp.length")
	ts.Stdin = pr
	var tsOut strings.Builder
	ts.Stdout = &tsOut
	if err := ts.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	stream := exec.Command(testutil.Tool(t, "goxio"), "capture", "-k", h.statsDir, "-p", pid, "-w", "-", "udp")
	stream.Stdout = pw
	var streamErr testutil.SyncBuffer
	stream.Stderr = &streamErr
	if err := stream.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(streamErr.String(), "attached to"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("goxio capture -w -: %s", streamErr.String())
		}
	}
	round(t, p)
	stream.Process.Signal(syscall.SIGINT)
	if err := stream.Wait(); err != nil {
		t.Fatalf("goxio capture -w -: %v: %s", err, streamErr.String())
	}
	if err := ts.Wait(); err != nil {
		t.Fatalf("tshark -r -: %v", err)
	}
	if lines := strings.Split(strings.TrimSpace(tsOut.String()), "\n"); len(lines) != captureRound || lines[0] != fmt.Sprintf("%d\t%d", all[0].Dst.Port(), 8+len(all[0].Payload)) {
		t.Fatalf("tshark -r - read %d packets (first %q), want %d", len(lines), lines[0], captureRound)
	}

	// -s: each packet cut at 64 bytes, its original length kept.
	c := startCapture(t, h, "-p", pid, "-w", dir+"/snap.pcap", "-s", "64")
	round(t, p)
	c.stop(t)
	got := readPcap(t, dir+"/snap.pcap")
	if len(got) != captureRound {
		t.Fatalf("snap: %d packets", len(got))
	}
	for i, g := range got {
		if g.OrigLen != all[i].OrigLen || g.CapLen != min(64, g.OrigLen) {
			t.Fatalf("snap: packet %d: captured %d of %d, want %d of %d", i, g.CapLen, g.OrigLen, min(64, all[i].OrigLen), all[i].OrigLen)
		}
	}
	tsharkClean(t, dir+"/snap.pcap")

	// --split group and socket.
	c = startCapture(t, h, "-p", pid, "-w", dir+"/split.pcap", "--split", "group")
	round(t, p)
	c.stop(t)
	uni, grp := readPcap(t, dir+"/split.unicast.pcap"), readPcap(t, dir+"/split.239.1.2.3.pcap")
	if d := sameUDP(filter(all, func(w wirePacket) bool { return !w.Dst.Addr().IsMulticast() }), uni); d != "" {
		t.Fatalf("split group, unicast: %s", d)
	}
	if d := sameUDP(filter(all, func(w wirePacket) bool { return w.Dst.Addr().IsMulticast() }), grp); d != "" || len(grp) == 0 {
		t.Fatalf("split group, 239.1.2.3: %d packets: %s", len(grp), d)
	}
	c = startCapture(t, h, "-p", pid, "-w", dir+"/sock.pcap", "--split", "socket")
	round(t, p)
	c.stop(t)
	files, _ := filepath.Glob(dir + "/sock." + pid + ".*.pcap")
	total := 0
	for _, f := range files {
		pk := readPcap(t, f)
		for _, q := range pk {
			if q.Src != pk[0].Src {
				t.Fatalf("split socket: %s holds %v and %v", f, pk[0].Src, q.Src)
			}
		}
		total += len(pk)
	}
	if len(files) != 3 || total != captureRound {
		t.Fatalf("split socket: %d files (%v), %d packets; want 3 senders' files, %d", len(files), files, total, captureRound)
	}

	// -C 1: a new file after each million bytes; nothing lost between files.
	c = startCapture(t, h, "-p", pid, "-w", dir+"/rot.pcap", "-C", "1")
	const rounds = 30
	for range rounds {
		round(t, p)
	}
	c.stop(t)
	rot, _ := filepath.Glob(dir + "/rot.pcap*")
	total = 0
	for _, f := range rot {
		st, _ := os.Stat(f)
		if st.Size() > 1_000_000+2000 {
			t.Fatalf("-C 1: %s has %d bytes", f, st.Size())
		}
		total += len(readPcap(t, f))
	}
	if len(rot) < 2 || total != rounds*captureRound {
		t.Fatalf("-C 1: %d files, %d packets; want 2 or more, %d", len(rot), total, rounds*captureRound)
	}

	// -G 1: a new file every second.
	c = startCapture(t, h, "-p", pid, "-w", dir+"/time.pcap", "-G", "1")
	for range 5 {
		round(t, p)
		time.Sleep(500 * time.Millisecond)
	}
	c.stop(t)
	rot, _ = filepath.Glob(dir + "/time.pcap*")
	total = 0
	for _, f := range rot {
		total += len(readPcap(t, f))
	}
	if len(rot) < 2 || total != 5*captureRound {
		t.Fatalf("-G 1: %d files, %d packets; want 2 or more, %d", len(rot), total, 5*captureRound)
	}
	p.exit(10 * time.Second)
}

func filter(pkts []wirePacket, f func(wirePacket) bool) []wirePacket {
	var out []wirePacket
	for _, p := range pkts {
		if f(p) {
			out = append(out, p)
		}
	}
	return out
}

// TestCaptureAllLater: --all attaches to processes that start after it; a datagram between two
// captured processes shows once.
func TestCaptureAllLater(t *testing.T) {
	if captureNet(t) {
		return
	}
	h := newShmHarness(t)
	gen := capgen(t, h)
	file := t.TempDir() + "/all.pcap"
	c := startCapture(t, h, "--all", "-w", file, "udp")
	rx := h.start("rx", h.env(), nil, gen, "udprx")
	rx.expect("ready", 10*time.Second)
	tx := h.start("tx", h.env(), nil, gen, "udptx", "50")
	tx.expect("ready", 10*time.Second)
	c.waitStderr(t, "capturing pid "+itoa(rx.pid()), 10*time.Second)
	c.waitStderr(t, "capturing pid "+itoa(tx.pid()), 10*time.Second)
	tx.say("go")
	tx.expect("done 50", 20*time.Second)
	rx.say("exit")
	rx.expect("got 50", 10*time.Second)
	c.stop(t)
	got := readPcap(t, file)
	if len(got) != 50 {
		t.Fatalf("%d packets, want 50 (each once)", len(got))
	}
	for i, g := range got {
		if g.Src.Port() != 8001 || int(g.Dst.Port()) != 9001+i%2 || len(g.Payload) != 1+(i*37)%1400 {
			t.Fatalf("packet %d: %v", i, g)
		}
	}
}

// TestCaptureAttachDetachKill: captures attached and detached while a program streams (acked
// windows: no datagram may be lost) lose none of its datagrams; a capture tool killed with SIGKILL
// is noticed within a second (the capture word cleared, the segment removed) and the program
// goes on.
func TestCaptureAttachDetachKill(t *testing.T) {
	if captureNet(t) {
		return
	}
	h := newShmHarness(t)
	dir := t.TempDir()
	rx := h.start("rx", h.env(), nil, h.udp, "rx", "-p", "0", "-a", "32", "-i", "3000")
	port, _ := rx.ready()
	tx := h.start("tx", h.env(), nil, h.udp, "tx", "-p", itoa(port), "-s", "1", "-a", "32", "-T", "4000", "-u", "20")
	tx.ready()
	for i := range 3 {
		c := startCapture(t, h, "-p", itoa(tx.pid()), "-p", itoa(rx.pid()), "-w", fmt.Sprintf("%s/%d.pcap", dir, i))
		time.Sleep(300 * time.Millisecond)
		c.stop(t)
		if k := len(readPcap(t, fmt.Sprintf("%s/%d.pcap", dir, i))); k == 0 {
			t.Fatalf("capture %d caught nothing of the stream", i)
		}
	}
	c := startCapture(t, h, "-p", itoa(tx.pid()), "-w", dir+"/killed.pcap")
	time.Sleep(200 * time.Millisecond)
	c.cmd.Process.Kill()
	killed := time.Now()
	<-c.done
	seg, err := stats.OpenSegment(filepath.Join(h.statsDir, stats.FilePrefix+itoa(tx.pid())))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	word, err := seg.CaptureWord()
	if err != nil {
		t.Fatal(err)
	}
	for atomic.LoadUint64(word) != 0 {
		if time.Since(killed) > time.Second {
			t.Fatalf("the capture word is still %#x a second after the tool died", atomic.LoadUint64(word))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("tap off %v after the tool died", time.Since(killed).Round(time.Millisecond))
	if left, _ := filepath.Glob(fmt.Sprintf("/dev/shm/goxio.%d.cap.%d.*", os.Getuid(), tx.pid())); len(left) != 0 {
		t.Fatalf("capture segments left: %v", left)
	}
	sent, _ := tx.sent(30 * time.Second)
	s := rx.summary(30 * time.Second)
	requireIntact(t, "rx", s)
	if sent == 0 || s.total != sent || s.gaps != 0 {
		t.Fatalf("sent %d, received %d, %d gaps:\n%s", sent, s.total, s.gaps, s.text)
	}
	t.Logf("%d datagrams, none lost", sent)
}

// followTCP returns the bytes of TCP stream 0 of a file per direction (node 0 first), as
// `tshark -z follow,tcp,raw` gives them back.
func followTCP(t *testing.T, file string) (node0, node1 string) {
	t.Helper()
	out, err := exec.Command(testutil.Program(t, "tshark", "tshark"), "-r", file, "-q", "-z", "follow,tcp,raw,0").Output()
	if err != nil {
		t.Fatalf("tshark follow %s: %v", file, err)
	}
	var b0, b1 strings.Builder
	seps := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "=====") {
			seps++
			continue
		}
		if seps != 1 || strings.HasPrefix(l, "Follow:") || strings.HasPrefix(l, "Filter:") || strings.HasPrefix(l, "Node ") || l == "" {
			continue
		}
		if strings.HasPrefix(l, "\t") {
			b1.WriteString(strings.TrimSpace(l))
		} else {
			b0.WriteString(strings.TrimSpace(l))
		}
	}
	return b0.String(), b1.String()
}

// TestCaptureTCPFollow: a request/response exchange over shared-memory TCP, captured by goxio
// capture, gives back with tshark's "Follow TCP stream" exactly the byte streams tcpdump -i lo
// records with the library off, per direction; over IPv4 and over IPv6 ([::1], IPv6 headers).
func TestCaptureTCPFollow(t *testing.T) {
	if captureNet(t) {
		return
	}
	for _, mode := range []string{"tcp", "tcp6"} {
		t.Run(mode, func(t *testing.T) { captureTCPFollow(t, mode) })
	}
}

func captureTCPFollow(t *testing.T, mode string) {
	h := newShmHarness(t)
	gen := capgen(t, h)
	dir := t.TempDir()
	const n = "200"
	td := startTcpdump(t, dir+"/kernel.pcap", "tcp port 9200")
	k := h.start("capgen", testutil.Env(""), nil, gen, mode, n)
	k.expect("ready", 10*time.Second)
	k.say("go")
	k.expect("done "+n+" bad 0", 30*time.Second)
	k.exit(10 * time.Second)
	td.stopTcpdump(t)
	want0, want1 := followTCP(t, dir+"/kernel.pcap")
	// The byte counts capgen sends: sum of 1 + (i*331)%3000 and of 1 + (i*977)%5000, as hex.
	q, r := 0, 0
	for i := range 200 {
		q += 1 + (i*331)%3000
		r += 1 + (i*977)%5000
	}
	if len(want0) != 2*q || len(want1) != 2*r {
		t.Fatalf("tcpdump's streams: %d and %d bytes, want %d and %d", len(want0)/2, len(want1)/2, q, r)
	}
	p := h.start("capgen", h.tcpEnv(), nil, gen, mode, n)
	p.expect("ready", 10*time.Second)
	c := startCapture(t, h, "-p", itoa(p.pid()), "-w", dir+"/goxio.pcapng", "--pcapng", "tcp port 9200")
	p.say("go")
	p.expect("done "+n+" bad 0", 30*time.Second)
	c.stop(t)
	p.exit(10 * time.Second)
	got0, got1 := followTCP(t, dir+"/goxio.pcapng")
	if got0 != want0 || got1 != want1 {
		t.Fatalf("followed streams: %d and %d bytes, want %d and %d (or the bytes differ)", len(got0)/2, len(got1)/2, q, r)
	}
	ring := 0
	for _, pk := range readPcap(t, dir+"/goxio.pcapng") {
		if strings.Contains(pk.Comment, "transport=shm-tcp") {
			ring++
		}
		if want6 := mode == "tcp6"; pk.Src.Addr().Is6() != want6 || pk.Dst.Addr().Is6() != want6 {
			t.Fatalf("%s: packet %v has the wrong family", mode, pk)
		}
	}
	if ring == 0 {
		t.Fatal("no segment went through the shared-memory ring: the test proves nothing")
	}
	tsharkClean(t, dir+"/goxio.pcapng")
	t.Logf("%d segments through the ring; streams of %d and %d bytes identical", ring, q, r)
}

// TestCaptureDumpOS: datagrams an engine socket sends to a program without goxio go through the
// kernel; goxio capture records them only with --dump-os, then the same as tcpdump -i lo.
func TestCaptureDumpOS(t *testing.T) {
	if captureNet(t) {
		return
	}
	h := newShmHarness(t)
	gen := capgen(t, h)
	dir := t.TempDir()
	for _, dump := range []bool{false, true} {
		rx := h.start("rx", testutil.Env(""), nil, gen, "udprx")
		rx.expect("ready", 10*time.Second)
		tx := h.start("tx", h.env(), nil, gen, "udptx", "40")
		tx.expect("ready", 10*time.Second)
		file := fmt.Sprintf("%s/dump-%v.pcap", dir, dump)
		args := []string{"-p", itoa(tx.pid()), "-w", file}
		if dump {
			args = append(args, "--dump-os")
		}
		td := startTcpdump(t, file+".lo", "udp")
		c := startCapture(t, h, args...)
		tx.say("go")
		tx.expect("done 40", 20*time.Second)
		rx.say("exit")
		rx.expect("got 40", 10*time.Second)
		c.stop(t)
		td.stopTcpdump(t)
		got, want := readPcap(t, file), readPcap(t, file+".lo")
		if len(want) != 40 {
			t.Fatalf("tcpdump saw %d datagrams, want 40", len(want))
		}
		if !dump && len(got) != 0 {
			t.Fatalf("without --dump-os: %d kernel datagrams recorded", len(got))
		}
		if dump {
			if d := sameUDP(want, got); d != "" {
				t.Fatalf("--dump-os: %s", d)
			}
		}
	}
}

package stats

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// newWriter creates a segment in a fresh directory and closes it at cleanup.
func newWriter(t testing.TB, maxSockets int) *Writer {
	t.Helper()
	w, err := Create(t.TempDir(), maxSockets, ProcessInfo{
		AppID:   "test-app",
		Version: "1.2.3-test",
		Params:  []Param{{"VMA_RX_POLL", "100000"}, {"VMA_SPEC", "latency"}},
	})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// openReader maps the writer's segment for reading.
func openReader(t testing.TB, w *Writer) *Segment {
	t.Helper()
	seg, err := OpenSegment(w.Path())
	if err != nil {
		t.Fatalf("OpenSegment: %v", err)
	}
	t.Cleanup(func() { seg.Close() })
	return seg
}

func snapshot(t testing.TB, seg *Segment) *Snapshot {
	t.Helper()
	snap, err := seg.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return snap
}

func findFD(t testing.TB, snap *Snapshot, fd int) SocketSnapshot {
	t.Helper()
	for _, s := range snap.Sockets {
		if s.FD == fd {
			return s
		}
	}
	t.Fatalf("fd %d not in snapshot (%d sockets)", fd, len(snap.Sockets))
	return SocketSnapshot{}
}

func TestCreateFileAndHeader(t *testing.T) {
	w := newWriter(t, 0)
	want := "goxiostat." + strconv.Itoa(os.Getpid())
	if filepath.Base(w.Path()) != want {
		t.Fatalf("path %s, want base %s", w.Path(), want)
	}
	st, err := os.Stat(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if st.Size() > 256<<10 {
		t.Errorf("default segment is %d bytes, want a small file", st.Size())
	}
	seg := openReader(t, w)
	snap := snapshot(t, seg)
	if snap.Process.Pid != os.Getpid() || snap.Process.AppID != "test-app" || snap.Process.Version != "1.2.3-test" {
		t.Errorf("process info %+v", snap.Process)
	}
	if len(snap.Process.Params) != 2 || snap.Process.Params[1] != (Param{"VMA_SPEC", "latency"}) {
		t.Errorf("params %+v", snap.Process.Params)
	}
	if len(snap.Process.Cmdline) == 0 || snap.Process.Cmdline[0] != os.Args[0] {
		t.Errorf("cmdline %q, want argv0 %q", snap.Process.Cmdline, os.Args[0])
	}
	if snap.MaxSocket != DefaultMaxSockets {
		t.Errorf("max sockets %d", snap.MaxSocket)
	}
	if !seg.Alive() {
		t.Errorf("own segment reported dead")
	}
	if len(snap.Iomux) != 2 || snap.Iomux[0].Kind != IomuxSelect || snap.Iomux[1].Kind != IomuxPoll {
		t.Errorf("iomux blocks %+v", snap.Iomux)
	}
}

func TestLargeSegmentSize(t *testing.T) {
	w := newWriter(t, 65536)
	st, err := os.Stat(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 65536*512 || st.Size() > 33<<20 {
		t.Errorf("65536-socket segment is %d bytes, want about 32 MiB", st.Size())
	}
	s := w.Open(7)
	s.CountRx(false, 10)
	seg := openReader(t, w)
	if got := findFD(t, snapshot(t, seg), 7).Counters.RxPackets; got != 1 {
		t.Errorf("rx packets %d", got)
	}
}

func TestCountExact(t *testing.T) {
	w := newWriter(t, 8)
	s := w.Open(5)
	s.SetInfo(SocketInfo{Family: 2, Type: 2, Protocol: 17, Inode: 4242, Blocking: true})
	s.SetAddrs(netip.MustParseAddrPort("127.0.0.1:5001"), netip.MustParseAddrPort("[::1]:6000"))
	s.SetTransport(TransportSHM, ReasonNone)
	s.SetRule(12, "use vma udp_receiver *:5001")
	for i := range 1000 {
		s.CountRx(false, 64)
		s.CountRx(true, 10)
		s.CountTx(i%2 == 0, 100)
	}
	s.CountRxEAGAIN(false)
	s.CountTxEAGAIN(true)
	s.CountRxError(true)
	s.CountTxError(false)
	s.CountRxDrop(64)
	s.CountTxDrop()
	s.CountPoll(true)
	s.CountPoll(true)
	s.CountPoll(false)
	s.CountRetransmit()
	s.SetRxQueue(3, 300)
	s.SetRxQueue(1, 100)
	s.SetTxQueue(77)
	s.SetRxLimit(1 << 20)

	got := findFD(t, snapshot(t, openReader(t, w)), 5)
	c := got.Counters
	want := SocketCounters{
		RxPackets: 1000, RxBytes: 64000, RxEAGAIN: 1, RxOSPackets: 1000, RxOSBytes: 10000, RxOSErrors: 1,
		TxPackets: 500, TxBytes: 50000, TxErrors: 1, TxOSPackets: 500, TxOSBytes: 50000, TxOSEAGAIN: 1,
		TxDrops: 1, RxDropPackets: 1, RxDropBytes: 64, PollHit: 2, PollMiss: 1, Retransmits: 1,
		RxQueuePackets: 1, RxQueuePktsMax: 3, RxQueueBytes: 100, RxQueueByteMax: 300, TxQueueBytes: 77,
	}
	if c != want {
		t.Errorf("counters\n got %+v\nwant %+v", c, want)
	}
	if got.Inode != 4242 || got.Proto() != "udp" || !got.Blocking || got.Protocol != 17 {
		t.Errorf("info %+v", got)
	}
	if got.Local.String() != "127.0.0.1:5001" || got.Peer.String() != "[::1]:6000" {
		t.Errorf("addrs %v %v", got.Local, got.Peer)
	}
	if got.Transport != TransportSHM || got.RuleLine != 12 || got.Rule != "use vma udp_receiver *:5001" {
		t.Errorf("transport %v rule %d %q", got.Transport, got.RuleLine, got.Rule)
	}
	if got.RxLimit != 1<<20 {
		t.Errorf("rx limit %d", got.RxLimit)
	}
}

func TestTransportReasonAndState(t *testing.T) {
	w := newWriter(t, 4)
	s := w.Open(9)
	s.SetInfo(SocketInfo{Family: 10, Type: 1})
	s.SetTransport(TransportOS, ReasonUnsupportedOption)
	s.SetState(TCPEstablished)
	s.SetBlocking(false)
	got := findFD(t, snapshot(t, openReader(t, w)), 9)
	if got.Transport != TransportOS || got.Reason != ReasonUnsupportedOption || got.State != TCPEstablished || got.Blocking {
		t.Errorf("got %v %v %v blocking=%v", got.Transport, got.Reason, got.State, got.Blocking)
	}
	if got.Proto() != "tcp" || got.Family != 10 {
		t.Errorf("proto %s family %d", got.Proto(), got.Family)
	}
	g := snapshot(t, openReader(t, w)).Global
	if g.Fallbacks != 1 || g.Offloaded != 0 {
		t.Errorf("global %+v", g)
	}
	if Reason(200).String() != "reason(200)" || Transport(9).String() != "transport(9)" {
		t.Errorf("unknown enum names")
	}
}

func TestSlotsExhaustedAndReuse(t *testing.T) {
	w := newWriter(t, 2)
	a, b := w.Open(3), w.Open(4)
	if a == nil || b == nil {
		t.Fatal("Open returned nil with free slots")
	}
	if c := w.Open(5); c != nil {
		t.Fatal("Open succeeded with no free slot")
	}
	// A nil socket must be usable without checks.
	var nilSock *Socket
	nilSock.CountRx(false, 1)
	nilSock.SetTransport(TransportSHM, ReasonNone)
	nilSock.JoinGroup(netip.MustParseAddr("224.0.0.1"))
	w.CloseSocket(nilSock)

	seg := openReader(t, w)
	snap := snapshot(t, seg)
	if snap.Global.SlotsExhausted != 1 || snap.Global.SocketsCurrent != 2 || snap.Global.SocketsOpened != 2 {
		t.Errorf("global %+v", snap.Global)
	}
	a.CountRx(false, 100)
	slotA, genA := findFD(t, snap, 3).Slot, findFD(t, snap, 3).Gen
	w.CloseSocket(a)
	a.CountRx(false, 100) // after close: scratch, must not show up anywhere
	c := w.Open(6)
	if c == nil {
		t.Fatal("Open after close returned nil")
	}
	a.CountRx(false, 100)
	snap = snapshot(t, seg)
	got := findFD(t, snap, 6)
	if got.Counters.RxPackets != 0 {
		t.Errorf("reused slot starts with %d rx packets", got.Counters.RxPackets)
	}
	if got.Slot != slotA || got.Gen != genA+1 {
		t.Errorf("fd 6 in slot %d gen %d, want fd 3's slot %d with gen %d", got.Slot, got.Gen, slotA, genA+1)
	}
	for _, s := range snap.Sockets {
		if s.FD == 3 {
			t.Errorf("closed fd 3 still listed")
		}
	}
	if snap.Global.SocketsCurrent != 2 || snap.Global.SocketsMax != 2 {
		t.Errorf("global %+v", snap.Global)
	}
}

func TestNilWriter(t *testing.T) {
	var w *Writer
	if s := w.Open(1); s != nil {
		t.Fatal("nil writer gave a socket")
	}
	w.Select().CountCall()
	w.Poll().CountPoll(true)
	w.OpenEpoll(3).CountReady(1, 2)
	w.OpenRing(TransportSHM, "x").CountRx(1)
	w.OpenPool("p").SetSize(1, 1)
	w.Global().Add(GlobalForks, 1)
	if n := w.PollCommands(nil); n != 0 {
		t.Fatal("nil writer ran commands")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create("", 10, ProcessInfo{}); !errors.Is(err, ErrDisabled) {
		t.Fatalf("Create(\"\") = %v, want ErrDisabled", err)
	}
}

func TestCloseRemovesFileAndKeepsHandlesSafe(t *testing.T) {
	w := newWriter(t, 4)
	s := w.Open(3)
	r := w.OpenRing(TransportSHM, "ring")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment still exists after Close: %v", err)
	}
	// Counting after Close must not fault: the mapping is anonymous now.
	s.CountRx(false, 1)
	r.CountTx(10)
	w.Global().Add(GlobalForks, 1)
	if w.Open(4) != nil {
		t.Error("Open after Close returned a socket")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRingPoolIomux(t *testing.T) {
	w := newWriter(t, 4)
	r := w.OpenRing(TransportXDP, "xdp:eth0/0")
	r.CountRx(100)
	r.CountRx(50)
	r.CountTx(10)
	r.CountWakeup(false)
	r.CountWakeup(true)
	r.CountRxDrop()
	r.SetQueue(5, 6)
	p := w.OpenPool("rx")
	p.SetSize(1024, 1000)
	p.SetSize(1024, 10)
	p.SetSize(1024, 900)
	p.CountNoBuffers()
	ep := w.OpenEpoll(42)
	ep.CountCall()
	ep.CountCall()
	ep.CountPoll(true)
	ep.CountTimeout()
	ep.CountReady(1, 3)
	ep.SetPollingCPU(150)
	w.Select().CountError()

	snap := snapshot(t, openReader(t, w))
	if len(snap.Rings) != 1 {
		t.Fatalf("rings %+v", snap.Rings)
	}
	rs := snap.Rings[0]
	if rs.Name != "xdp:eth0/0" || rs.Transport != TransportXDP || rs.RxPackets != 2 || rs.RxBytes != 150 ||
		rs.TxPackets != 1 || rs.WakeRequest != 1 || rs.WakeSent != 1 || rs.RxDrops != 1 || rs.RxQueue != 5 || rs.TxQueue != 6 {
		t.Errorf("ring %+v", rs)
	}
	if len(snap.Pools) != 1 || snap.Pools[0] != (PoolSnapshot{Slot: 0, Gen: 1, ID: snap.Pools[0].ID, Name: "rx",
		Total: 1024, Free: 900, MinFree: 10, NoBufs: 1}) {
		t.Errorf("pools %+v", snap.Pools)
	}
	if len(snap.Iomux) != 3 {
		t.Fatalf("iomux %+v", snap.Iomux)
	}
	e := snap.Iomux[2]
	if e.Name() != "epoll[42]" || e.Calls != 2 || e.PollHit != 1 || e.Timeouts != 1 || e.OSReady != 1 ||
		e.OffloadReady != 3 || e.PollingCPU != 100 {
		t.Errorf("epoll %+v", e)
	}
	if snap.Iomux[0].Errors != 1 {
		t.Errorf("select %+v", snap.Iomux[0])
	}
	w.CloseEpoll(ep)
	w.CloseRing(r)
	w.ClosePool(p)
	snap = snapshot(t, openReader(t, w))
	if len(snap.Iomux) != 2 || len(snap.Rings) != 0 || len(snap.Pools) != 0 {
		t.Errorf("after close: %d iomux %d rings %d pools", len(snap.Iomux), len(snap.Rings), len(snap.Pools))
	}
	for range ringSlots {
		if w.OpenRing(TransportSHM, "x") == nil {
			t.Fatal("ring slots exhausted early")
		}
	}
	if w.OpenRing(TransportSHM, "x") != nil {
		t.Fatal("17th ring got a slot")
	}
	if g := snapshot(t, openReader(t, w)).Global; g.RingsExhausted != 1 {
		t.Errorf("rings exhausted %d", g.RingsExhausted)
	}
}

func TestMulticastGroups(t *testing.T) {
	w := newWriter(t, 4)
	a, b := w.Open(3), w.Open(4)
	g1, g2 := netip.MustParseAddr("224.1.1.1"), netip.MustParseAddr("ff02::1:3")
	if !a.JoinGroup(g1) || !a.JoinGroup(g2) || !b.JoinGroup(g1) || !a.JoinGroup(g1) {
		t.Fatal("JoinGroup failed")
	}
	seg := openReader(t, w)
	snap := snapshot(t, seg)
	if got := findFD(t, snap, 3).Groups; len(got) != 2 || got[0] != g1 || got[1] != g2 {
		t.Errorf("fd 3 groups %v", got)
	}
	if got := findFD(t, snap, 4).Groups; len(got) != 1 || got[0] != g1 {
		t.Errorf("fd 4 groups %v", got)
	}
	a.LeaveGroup(g1)
	w.CloseSocket(b)
	snap = snapshot(t, seg)
	if got := findFD(t, snap, 3).Groups; len(got) != 1 || got[0] != g2 {
		t.Errorf("after leave: fd 3 groups %v", got)
	}
	if len(w.mcIndex) != 1 {
		t.Errorf("group table keeps %d entries, want 1", len(w.mcIndex))
	}
	if got := a.Snapshot().Groups; len(got) != 1 || got[0] != g2 {
		t.Errorf("writer-side snapshot groups %v", got)
	}
}

func TestFinalFile(t *testing.T) {
	w := newWriter(t, 4)
	path := filepath.Join(t.TempDir(), "final.txt")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w.SetFinalFile(int(f.Fd()))
	s := w.Open(11)
	s.SetInfo(SocketInfo{Family: 2, Type: 2})
	for range 37 {
		s.CountRx(false, 2048)
	}
	w.CloseSocket(s)
	s2 := w.Open(12)
	w.CloseSocket(s2)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.Contains(text, "Fd=[11]") || !strings.Contains(text, "Rx Offload: 74 / 37 / 0 / 0") ||
		!strings.Contains(text, "Fd=[12]") || !strings.Contains(text, "Rx and Tx were not active") {
		t.Errorf("final file:\n%s", text)
	}
}

func TestCreateReplacesStaleFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FilePrefix+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Create(dir, 4, ProcessInfo{})
	if err != nil {
		t.Fatalf("Create over a stale file: %v", err)
	}
	defer w.Close()
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() < headerWords*8 {
		t.Fatalf("stat %v %v", st, err)
	}
}

func TestCreateErrors(t *testing.T) {
	if _, err := Create(filepath.Join(t.TempDir(), "missing"), 4, ProcessInfo{}); err == nil {
		t.Fatal("Create in a missing directory succeeded")
	}
}

package capture

import (
	"bytes"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"

	"github.com/goxio/goxio/internal/procstat"
)

// dstPort9999 is "udp dst port 9999" as tcpdump -d prints it for Ethernet (IPv4 only).
var dstPort9999 = []bpf.Instruction{
	bpf.LoadAbsolute{Off: 12, Size: 2},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x0800, SkipFalse: 8},
	bpf.LoadAbsolute{Off: 23, Size: 1},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 17, SkipFalse: 6},
	bpf.LoadAbsolute{Off: 20, Size: 2},
	bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1fff, SkipTrue: 4},
	bpf.LoadMemShift{Off: 14},
	bpf.LoadIndirect{Off: 16, Size: 2},
	bpf.JumpIf{Cond: bpf.JumpEqual, Val: 9999, SkipFalse: 1},
	bpf.RetConstant{Val: 262144},
	bpf.RetConstant{Val: 0},
}

func assemble(t *testing.T, ins []bpf.Instruction) []bpf.RawInstruction {
	t.Helper()
	raw, err := bpf.Assemble(ins)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

var gens atomic.Uint64

// attachTest creates a segment for this process and points the taps at it.
func attachTest(t *testing.T, spec Spec) (*Segment, *uint64) {
	t.Helper()
	start, err := procstat.SelfStart()
	if err != nil {
		t.Fatal(err)
	}
	w := new(uint64)
	Init(w, os.Getpid(), func(err error) { t.Errorf("attach: %v", err) })
	spec.Pid, spec.UID, spec.ToolPid, spec.ToolStart = os.Getpid(), os.Getuid(), os.Getpid(), start
	spec.Gen = uint64(os.Getpid())<<20 + gens.Add(1)
	if spec.RingSize == 0 {
		spec.RingSize = MinRingSize
	}
	seg, err := Create(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		atomic.StoreUint64(w, spec.Gen|Detach)
		current(atomic.LoadUint64(w))
		_ = seg.Close()
	})
	atomic.StoreUint64(w, spec.Gen)
	return seg, w
}

func drain(t *testing.T, seg *Segment) []*Record {
	t.Helper()
	var out []*Record
	if err := seg.Drain(func(r *Record) { out = append(out, r) }); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	src = netip.MustParseAddrPort("127.0.0.1:4000")
	dst = netip.MustParseAddrPort("127.0.0.2:9999")
)

func TestUDPFilterAndFrame(t *testing.T) {
	seg, _ := attachTest(t, Spec{Filter: assemble(t, dstPort9999), Sockets: 16})
	payload := [][]byte{[]byte("hel"), []byte("lo, wor"), []byte("ld")}
	UDP(ShmUDP, Out, 5, 0, src, dst, payload, 12)
	UDP(ShmUDP, Out, 5, 0, src, netip.MustParseAddrPort("127.0.0.2:9998"), payload, 12)
	recs := drain(t, seg)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	r := recs[0]
	if r.FD != 5 || r.Transport != ShmUDP || r.Dir != Out || r.OrigLen != UDPHdrLen+12 || r.CapLen != r.OrigLen {
		t.Fatalf("record %+v", r)
	}
	p := gopacket.NewPacket(r.Data, layers.LayerTypeEthernet, gopacket.Default)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if ip == nil || udp == nil || p.ErrorLayer() != nil {
		t.Fatalf("not a UDP packet: %v", p)
	}
	if ip.SrcIP.String() != "127.0.0.1" || ip.DstIP.String() != "127.0.0.2" || udp.SrcPort != 4000 || udp.DstPort != 9999 {
		t.Fatalf("addresses %v:%d > %v:%d", ip.SrcIP, udp.SrcPort, ip.DstIP, udp.DstPort)
	}
	if !bytes.Equal(udp.Payload, []byte("hello, world")) {
		t.Fatalf("payload %q", udp.Payload)
	}
	// The checksums verify: recomputing them over the frame gives zero.
	if fold(sum(0, r.Data[EthLen:EthLen+IPLen])) != 0xffff {
		t.Fatal("bad IP checksum")
	}
	if fold(pseudo(r.Data, UDPHdrLen, 17, UDPLen+12)+sum(0, r.Data[EthLen+IPLen:])) != 0xffff {
		t.Fatal("bad UDP checksum")
	}
	c := seg.Counters()
	if c.Seen != 0 {
		// counters are published by sync or at detach; a capture still running may lag
		t.Logf("counters before detach %+v", c)
	}
}

func TestSnapLenCountersAndDetach(t *testing.T) {
	seg, w := attachTest(t, Spec{SnapLen: UDPHdrLen + 4, Sockets: 16})
	big := [][]byte{bytes.Repeat([]byte{7}, 1000)}
	for range 3 {
		UDP(ShmUDP, In, 3, 0, src, dst, big, 1000)
	}
	recs := drain(t, seg)
	if len(recs) != 3 || recs[0].CapLen != UDPHdrLen+4 || recs[0].OrigLen != UDPHdrLen+1000 || recs[0].Dir != In {
		t.Fatalf("records %d, first %+v", len(recs), recs[0])
	}
	gen := atomic.LoadUint64(w)
	atomic.StoreUint64(w, gen|Detach)
	if On() != true {
		t.Fatal("On false before the detach was acknowledged")
	}
	UDP(ShmUDP, In, 3, 0, src, dst, big, 1000) // acknowledges
	if atomic.LoadUint64(w) != 0 || On() {
		t.Fatalf("capture word %x after the detach", atomic.LoadUint64(w))
	}
	c := seg.Counters()
	if c != (Counters{Seen: 3, Matched: 3, Captured: 3}) {
		t.Fatalf("counters %+v", c)
	}
	if s := seg.Sockets(); len(s) != 1 || s[3] != c {
		t.Fatalf("socket counters %+v", s)
	}
}

func TestFullRingDropsAndCounts(t *testing.T) {
	seg, w := attachTest(t, Spec{Sockets: 4})
	payload := [][]byte{make([]byte, 1000)}
	const n = 100 // 100 records of 1080 bytes do not fit 64 KiB
	for range n {
		UDP(ShmUDP, Out, 1, 0, src, dst, payload, 1000)
	}
	got := len(drain(t, seg))
	for range 10 {
		UDP(ShmUDP, Out, 1, 0, src, dst, payload, 1000) // room again after the drain; across the wrap
	}
	got2 := len(drain(t, seg))
	atomic.StoreUint64(w, atomic.LoadUint64(w)|Detach)
	current(atomic.LoadUint64(w))
	c := seg.Counters()
	if got == 0 || got >= n || got2 != 10 || c.Captured != uint64(got+got2) || c.Dropped != uint64(n-got) || c.Seen != n+10 {
		t.Fatalf("first drain %d, second %d, counters %+v", got, got2, c)
	}
}

func TestTriggerPreAndStop(t *testing.T) {
	port := func(p uint32) []bpf.RawInstruction {
		ins := append([]bpf.Instruction(nil), dstPort9999...)
		ins[8] = bpf.JumpIf{Cond: bpf.JumpEqual, Val: p, SkipFalse: 1}
		return assemble(t, ins)
	}
	seg, _ := attachTest(t, Spec{Sockets: 4, State: TriggerWaiting, Trigger: port(7), Stop: port(8)})
	send := func(p uint16) {
		UDP(ShmUDP, Out, 1, 0, src, netip.AddrPortFrom(dst.Addr(), p), [][]byte{{1}}, 1)
	}
	send(1)
	send(2)
	send(7) // trigger
	send(3)
	send(8) // stop
	send(4)
	var ports []uint16
	var flags []uint16
	for _, r := range drain(t, seg) {
		ports = append(ports, uint16(r.Data[UDPHdrLen-6])<<8|uint16(r.Data[UDPHdrLen-5]))
		flags = append(flags, r.Flags)
	}
	want := []uint16{7, 3, 8}
	if len(ports) != 3 || ports[0] != 7 || ports[1] != 3 || ports[2] != 8 {
		t.Fatalf("ports %v, want %v", ports, want)
	}
	if flags[0]&RecTrigger == 0 || flags[2]&RecStop == 0 || seg.State() != Stopped {
		t.Fatalf("flags %v state %d", flags, seg.State())
	}
}

func TestPreTriggerRecordsMatches(t *testing.T) {
	seg, _ := attachTest(t, Spec{Sockets: 4, State: TriggerWaiting, Flags: FlagPreTrigger,
		Trigger: assemble(t, []bpf.Instruction{bpf.LoadExtension{Num: bpf.ExtLen}, bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: 100, SkipFalse: 1}, bpf.RetConstant{Val: 1}, bpf.RetConstant{Val: 0}})})
	UDP(ShmUDP, Out, 1, 0, src, dst, [][]byte{{1}}, 1)
	UDP(ShmUDP, Out, 1, 0, src, dst, [][]byte{make([]byte, 200)}, 200)
	recs := drain(t, seg)
	if len(recs) != 2 || recs[0].Flags&RecTrigger != 0 || recs[1].Flags&RecTrigger == 0 || seg.State() != TriggerFired {
		t.Fatalf("%d records, state %d", len(recs), seg.State())
	}
}

func TestTCPSegments(t *testing.T) {
	seg, _ := attachTest(t, Spec{Sockets: 4, SnapLen: 200, RingSize: 1 << 20})
	data := bytes.Repeat([]byte("abcdefgh"), 10000) // 80000 bytes: two segments
	TCP(ShmTCP, Out, 2, 0, src, dst, 1000, 5000, [][]byte{data}, len(data))
	recs := drain(t, seg)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		p := gopacket.NewPacket(r.Data, layers.LayerTypeEthernet, gopacket.Default)
		tcp, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if tcp == nil {
			t.Fatalf("record %d: no TCP: %v", i, p)
		}
		if want := uint32(1000 + i*MaxTCPPayload); tcp.Seq != want || tcp.Ack != 5000 || !tcp.PSH || !tcp.ACK {
			t.Fatalf("record %d: seq %d ack %d, want %d", i, tcp.Seq, tcp.Ack, want)
		}
	}
	if recs[1].OrigLen != TCPHdrLen+len(data)-MaxTCPPayload {
		t.Fatalf("second segment %d bytes", recs[1].OrigLen)
	}
}

func TestReach(t *testing.T) {
	if r := reach(dstPort9999); r != EthLen+IPLen+2+2 {
		t.Fatalf("reach %d", r)
	}
	if r := reach([]bpf.Instruction{bpf.LoadAbsolute{Off: 100, Size: 4}, bpf.TAX{}, bpf.RetA{}}); r != -1 {
		t.Fatalf("reach with TAX %d", r)
	}
}

func TestOffCostsNothing(t *testing.T) {
	w := new(uint64)
	Init(w, os.Getpid(), nil)
	if On() {
		t.Fatal("On with a zero word")
	}
	allocs := testing.AllocsPerRun(100, func() {
		if On() {
			UDP(ShmUDP, Out, 1, 0, src, dst, nil, 0)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

func TestSweep(t *testing.T) {
	start, err := procstat.SelfStart()
	if err != nil {
		t.Fatal(err)
	}
	live, err := Create(Spec{Pid: os.Getpid(), UID: os.Getuid(), Gen: uint64(os.Getpid())<<32 | 900, ToolPid: os.Getpid(), ToolStart: start, RingSize: MinRingSize})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	// A tool that is gone: pid 0x7ffffff0 does not run.
	dead, err := Create(Spec{Pid: os.Getpid(), UID: os.Getuid(), Gen: uint64(0x7ffffff0)<<32 | 901, ToolPid: 0x7ffffff0, ToolStart: 1, RingSize: MinRingSize})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if n := Sweep(); n < 1 {
		t.Fatalf("swept %d", n)
	}
	if _, err := os.Stat(live.Path); err != nil {
		t.Fatalf("a live tool's segment was removed: %v", err)
	}
	if _, err := os.Stat(dead.Path); !os.IsNotExist(err) {
		t.Fatalf("a dead tool's segment is still there: %v", err)
	}
}

// TestConcurrentAttachDetach: taps on several goroutines while captures come and go: no tap
// touches an unmapped segment (that would crash), every capture's counters add up.
func TestConcurrentAttachDetach(t *testing.T) {
	start, err := procstat.SelfStart()
	if err != nil {
		t.Fatal(err)
	}
	w := new(uint64)
	Init(w, os.Getpid(), func(err error) { t.Errorf("attach: %v", err) })
	stop := make(chan struct{})
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			payload := [][]byte{make([]byte, 100+g)}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if On() {
					UDP(ShmUDP, Out, g, 0, src, dst, payload, len(payload[0]))
				}
			}
		}()
	}
	for i := range 20 {
		gen := uint64(os.Getpid())<<32 | uint64(1000+i)
		seg, err := Create(Spec{Pid: os.Getpid(), UID: os.Getuid(), Gen: gen, ToolPid: os.Getpid(), ToolStart: start, Sockets: 8, RingSize: MinRingSize})
		if err != nil {
			t.Fatal(err)
		}
		atomic.StoreUint64(w, gen)
		records := 0
		for range 5 {
			time.Sleep(time.Millisecond)
			if err := seg.Drain(func(*Record) { records++ }); err != nil {
				t.Fatal(err)
			}
		}
		atomic.StoreUint64(w, gen|Detach)
		for deadline := time.Now().Add(5 * time.Second); atomic.LoadUint64(w) != 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("detach not acknowledged")
			}
		}
		if err := seg.Drain(func(*Record) { records++ }); err != nil {
			t.Fatal(err)
		}
		c := seg.Counters()
		if c.Seen != c.Matched || c.Captured+c.Dropped != c.Matched || uint64(records) != c.Captured {
			t.Fatalf("capture %d: %+v, %d records read", i, c, records)
		}
		seg.Close()
	}
	close(stop)
	for range 4 {
		<-done
	}
}

package capture

import (
	"sync/atomic"
	"testing"

	"golang.org/x/net/bpf"
)

// Per-packet cost of a tap: no capture attached (the call site's On), a capture whose filter
// matches nothing, one that matches everything (64-byte datagrams, the ring drained as it fills).

var payload64 = [][]byte{make([]byte, 64)}

func BenchmarkTapOff(b *testing.B) {
	Init(new(uint64), 1, nil)
	for b.Loop() {
		if On() {
			UDP(ShmUDP, Out, 3, 0, src, dst, payload64, 64)
		}
	}
}

func benchAttached(b *testing.B, filter []bpf.Instruction) {
	t := &testing.T{}
	var raw []bpf.RawInstruction
	if filter != nil {
		var err error
		if raw, err = bpf.Assemble(filter); err != nil {
			b.Fatal(err)
		}
	}
	seg, w := attachTest(t, Spec{Filter: raw, Sockets: 16, RingSize: 1 << 22})
	defer func() {
		atomic.StoreUint64(w, atomic.LoadUint64(w)|Detach)
		current(atomic.LoadUint64(w))
		seg.Close()
	}()
	n := 0
	for b.Loop() {
		if On() {
			UDP(ShmUDP, Out, 3, 0, src, dst, payload64, 64)
		}
		if n++; n%4096 == 0 {
			seg.Drain(func(*Record) {})
		}
	}
	b.ReportMetric(float64(seg.Counters().Dropped), "dropped")
}

func BenchmarkTapMatchNothing(b *testing.B) {
	ins := append([]bpf.Instruction(nil), dstPort9999...)
	ins[8] = bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1, SkipFalse: 1}
	benchAttached(b, ins)
}

func BenchmarkTapMatchEverything(b *testing.B) { benchAttached(b, nil) }

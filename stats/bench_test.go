package stats

import (
	"net/netip"
	"testing"
)

// BenchmarkCount is the data-path cost of counting one received packet
// (packets and bytes: two atomic adds).
func BenchmarkCount(b *testing.B) {
	w := newWriter(b, 100)
	s := w.Open(3)
	b.ReportAllocs()
	for b.Loop() {
		s.CountRx(false, 64)
	}
	if s.Snapshot().Counters.RxPackets == 0 {
		b.Fatal("nothing counted")
	}
}

// BenchmarkCountNil is the cost when the socket has no slot (stats off).
func BenchmarkCountNil(b *testing.B) {
	var s *Socket
	for b.Loop() {
		s.CountRx(false, 64)
	}
}

// BenchmarkCountParallel counts on one socket from every P: the contended
// worst case (several threads on one socket).
func BenchmarkCountParallel(b *testing.B) {
	w := newWriter(b, 100)
	s := w.Open(3)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.CountRx(false, 64)
		}
	})
}

// BenchmarkCountPerSocket counts on a socket per goroutine (the usual case:
// no sharing of cache lines between threads).
func BenchmarkCountPerSocket(b *testing.B) {
	w := newWriter(b, 100)
	b.RunParallel(func(pb *testing.PB) {
		s := w.Open(3)
		for pb.Next() {
			s.CountRx(false, 64)
		}
	})
}

// BenchmarkSetTransport is a metadata change (mutex + seqlock).
func BenchmarkSetTransport(b *testing.B) {
	w := newWriter(b, 100)
	s := w.Open(3)
	for b.Loop() {
		s.SetTransport(TransportSHM, ReasonNone)
	}
}

// BenchmarkPollCommandsIdle is the progress engine's cost per poll when no
// command is pending.
func BenchmarkPollCommandsIdle(b *testing.B) {
	w := newWriter(b, 100)
	for b.Loop() {
		w.PollCommands(nil)
	}
}

func benchSnapshot(b *testing.B, slots, open int) {
	w := newWriter(b, slots)
	for i := range open {
		s := w.Open(i + 3)
		s.SetAddrs(netip.MustParseAddrPort("127.0.0.1:5000"), netip.AddrPort{})
		s.CountRx(false, 10)
	}
	seg := openReader(b, w)
	b.ReportAllocs()
	for b.Loop() {
		snap, err := seg.Snapshot()
		if err != nil || len(snap.Sockets) != open {
			b.Fatalf("snapshot: %v", err)
		}
	}
}

// BenchmarkSnapshot100 is the reader's cost for a default segment with 100
// open sockets.
func BenchmarkSnapshot100(b *testing.B) { benchSnapshot(b, 100, 100) }

// BenchmarkSnapshot65536 is the reader's cost for a 65536-slot segment with
// 10000 open sockets.
func BenchmarkSnapshot65536(b *testing.B) { benchSnapshot(b, 65536, 10000) }

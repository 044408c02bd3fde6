package xdp

import (
	"testing"
)

// TestRingBoundsChecks plays a misbehaving kernel: it writes bad descriptors into the
// RX and completion rings of an idle socket (no program, so the kernel writes nothing
// there) and checks that Receive and Complete refuse them, hand out only the valid
// ones, and keep the frame accounting straight.
func TestRingBoundsChecks(t *testing.T) {
	tp := newTopo(t, 1)
	var s *Socket
	inNetns(t, tp.nsA, func() {
		var err error
		if s, err = Open(tp.idxA, 0, Config{RxFrames: 16, TxFrames: 16}); err != nil {
			t.Fatal(err)
		}
	})
	defer s.Close()
	fs := s.umem.frameSize
	// The kernel owns every RX frame now; frame 3 is a valid target.
	post := func(r *ring, descs ...[2]uint64) {
		p := r.loadProd()
		for i, d := range descs {
			if r.entSize == descEntrySize {
				r.setDescAt(p+uint32(i), d[0], uint32(d[1]))
			} else {
				r.setAddrAt(p+uint32(i), d[0])
			}
		}
		r.storeProd(p + uint32(len(descs)))
	}
	post(&s.rx,
		[2]uint64{3*fs + 256, 60},   // valid
		[2]uint64{16 * fs, 60},      // a TX frame
		[2]uint64{1 << 40, 60},      // outside UMEM
		[2]uint64{4*fs + 2000, 100}, // runs past the frame's end
		[2]uint64{5 * fs, 0},        // empty
		[2]uint64{3*fs + 256, 60},   // frame 3 again, now held by the caller
	)
	// As the kernel would have, take one frame off the fill ring for the valid one.
	s.fill.storeCons(s.fill.loadCons() + 1)
	frames := make([]Frame, 8)
	n := s.Receive(frames)
	if n != 1 || frames[0].addr != 3*fs+256 || len(frames[0].Data) != 60 || cap(frames[0].Data) != int(fs-256) {
		t.Fatalf("Receive = %d, first %+v", n, frames[0].addr)
	}
	st := mustStats(t, s)
	if st.RxInvalid != 5 || st.RxPackets != 1 {
		t.Errorf("stats %+v, want 5 invalid and 1 packet", st)
	}
	if a := s.Accounting(); a.RxHeld != 1 {
		t.Errorf("accounting %+v", a)
	}
	if s.Release(frames[:1]) != 1 || s.Release(frames[:1]) != 0 {
		t.Errorf("Release of a frame, then of the cleared frame")
	}

	// A producer index further ahead than the ring size is not believed.
	p := s.rx.loadProd()
	s.rx.storeProd(p + s.rx.size + 1)
	if n := s.Receive(frames); n != 0 {
		t.Errorf("Receive with a producer index beyond the ring gave %d frames", n)
	}
	s.rx.storeProd(p)

	// Completion ring: only the start of a TX frame the kernel owns is accepted.
	if n := s.Alloc(frames[:2]); n != 2 {
		t.Fatalf("Alloc = %d", n)
	}
	txFrame := frames[0].addr
	s.Free(frames[:2])
	post(&s.comp,
		[2]uint64{txFrame},      // free, not in the kernel
		[2]uint64{2 * fs},       // an RX frame
		[2]uint64{txFrame + 10}, // not a frame start
		[2]uint64{1 << 40},      // outside UMEM
	)
	if n := s.Complete(); n != 0 {
		t.Errorf("Complete accepted %d bad entries", n)
	}
	if st := mustStats(t, s); st.CompInvalid != 4 {
		t.Errorf("CompInvalid = %d, want 4", st.CompInvalid)
	}
	a := s.Accounting()
	if a.TxFree != a.TxFrames || a.RxKernel != a.RxFrames {
		t.Errorf("accounting after bad entries: %+v", a)
	}
}

package xdp

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestTransmit sends hand-built frames from the AF_XDP socket to a kernel UDP socket in
// the peer namespace: every datagram arrives with its payload, in order, and after
// many batches every TX frame is back in the free list.
func TestTransmit(t *testing.T) {
	tp := newTopo(t, 1)
	_, socks := attachOpen(t, tp, Options{}, Config{RxFrames: 64, TxFrames: 128}, 0)
	s := socks[0]
	dst := netip.AddrPortFrom(tp.addrB, 8000)
	src := netip.AddrPortFrom(tp.addrA, 8001)
	recv := udpSocket(t, tp.nsB, dst)

	const rounds, batch = 50, 40 // 2000 frames through a 128-frame pool
	frames := make([]Frame, batch)
	seq := 0
	for r := range rounds {
		n := 0
		for try := 0; n < batch && try < 1000; try++ {
			n += s.Alloc(frames[n:])
			if n < batch {
				time.Sleep(time.Millisecond)
			}
		}
		if n != batch {
			t.Fatalf("round %d: Alloc gave %d of %d frames: %+v", r, n, batch, s.Accounting())
		}
		for i := range frames {
			f := udpFrame(frameSpec{dstMAC: tp.macB, srcMAC: tp.macA, src: src, dst: dst, payload: fmt.Appendf(nil, "tx %06d", seq+i)})
			if len(frames[i].Data) != s.FrameSize() {
				t.Fatalf("allocated frame of %d bytes, want %d", len(frames[i].Data), s.FrameSize())
			}
			frames[i].Data = frames[i].Data[:copy(frames[i].Data, f)]
		}
		a := checkAccounting(t, s)
		if a.TxHeld != batch {
			t.Errorf("round %d: %d TX frames held, want %d", r, a.TxHeld, batch)
		}
		sent, err := s.Transmit(frames)
		if err != nil || sent != batch {
			t.Fatalf("round %d: Transmit = %d, %v; want %d", r, sent, err, batch)
		}
		if frames[0].Data != nil {
			t.Errorf("Transmit left the sent frame in the caller's slice")
		}
		got := recvUDP(recv, batch, 5*time.Second)
		if len(got) != batch {
			t.Fatalf("round %d: peer received %d of %d datagrams (stats %+v)", r, len(got), batch, mustStats(t, s))
		}
		for i, g := range got {
			if want := fmt.Sprintf("tx %06d", seq+i); string(g) != want {
				t.Fatalf("round %d: datagram %d = %q, want %q", r, i, g, want)
			}
		}
		seq += batch
		checkAccounting(t, s)
	}
	// Every frame comes back from the completion ring (boundedly).
	deadline := time.Now().Add(3 * time.Second)
	for s.Accounting().TxKernel != 0 && time.Now().Before(deadline) {
		s.Complete()
		time.Sleep(time.Millisecond)
	}
	a := checkAccounting(t, s)
	if a.TxFree != a.TxFrames || a.RxKernel != a.RxFrames {
		t.Errorf("frames leaked: %+v", a)
	}
	st := mustStats(t, s)
	if st.TxPackets != rounds*batch || st.TxCompleted != rounds*batch || st.CompInvalid != 0 || st.KernelTxInvalidDescs != 0 {
		t.Errorf("stats %+v, want %d sent and completed", st, rounds*batch)
	}
	if got := recvUDP(recv, 1, 100*time.Millisecond); len(got) != 0 {
		t.Errorf("peer received %d datagrams too many", len(got))
	}
}

// TestTransmitMisuse checks that Transmit, Free and Release refuse frames the caller
// does not hold, so that no frame is ever in two places.
func TestTransmitMisuse(t *testing.T) {
	tp := newTopo(t, 1)
	_, socks := attachOpen(t, tp, Options{}, Config{RxFrames: 16, TxFrames: 16}, 0)
	s := socks[0]
	frames := make([]Frame, 4)
	if n := s.Alloc(frames); n != 4 {
		t.Fatalf("Alloc = %d", n)
	}
	moved := []Frame{frames[0]}
	moved[0].Data = moved[0].Data[14:60]
	if n, err := s.Transmit(moved); n != 0 || err == nil {
		t.Errorf("Transmit of a frame with a moved start = %d, %v; want an error", n, err)
	}
	empty := []Frame{frames[1]}
	empty[0].Data = empty[0].Data[:0]
	if n, err := s.Transmit(empty); n != 0 || err == nil {
		t.Errorf("Transmit of an empty frame = %d, %v; want an error", n, err)
	}
	if n, err := s.Transmit([]Frame{{}}); n != 0 || err == nil {
		t.Errorf("Transmit of a zero Frame = %d, %v; want an error", n, err)
	}
	if n := s.Release(frames[:2]); n != 0 {
		t.Errorf("Release took %d TX frames", n)
	}
	copyOf := frames[2]
	if n := s.Free(frames); n != 4 {
		t.Errorf("Free = %d, want 4", n)
	}
	if n := s.Free([]Frame{copyOf}); n != 0 {
		t.Errorf("Free of a freed frame = %d, want 0", n)
	}
	if n, err := s.Transmit([]Frame{copyOf}); n != 0 || err == nil {
		t.Errorf("Transmit of a freed frame = %d, %v; want an error", n, err)
	}
	a := checkAccounting(t, s)
	if a.TxFree != a.TxFrames {
		t.Errorf("accounting after misuse: %+v", a)
	}
}

func mustStats(t testing.TB, s *Socket) Stats {
	t.Helper()
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

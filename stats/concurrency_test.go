package stats

import (
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestZeroLosesNoIncrement counts from several goroutines while a reader
// zeroes again and again: every increment is either in a value the zeroing
// swapped out or in the final counter, never lost or counted twice.
func TestZeroLosesNoIncrement(t *testing.T) {
	w := newWriter(t, 4)
	s := w.Open(3)
	seg := openReader(t, w)
	const goroutines, perG = 2, 200000
	var taken atomic.Uint64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perG {
				s.CountRx(false, 3)
			}
		}()
	}
	stop := make(chan struct{})
	zeros := 0
	go func() {
		wg.Wait()
		close(stop)
	}()
loop:
	for {
		select {
		case <-stop:
			break loop
		default:
		}
		err := seg.zero(nil, func(fd int, c Counter, v uint64) {
			if c == CtrRxPackets {
				taken.Add(v)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		zeros++
	}
	final := findFD(t, snapshot(t, seg), 3).Counters.RxPackets
	if got := taken.Load() + final; got != goroutines*perG {
		t.Fatalf("taken %d + final %d = %d, want %d (after %d zeroings)", taken.Load(), final, got, goroutines*perG, zeros)
	}
	if zeros < 2 {
		t.Logf("only %d zeroings overlapped the counting", zeros)
	}
}

// TestZeroThenCountExact: after Zero the next read is zero, later counts are
// exact, maxima restart from the current level, and -s style filtering
// leaves other sockets alone.
func TestZeroThenCountExact(t *testing.T) {
	w := newWriter(t, 4)
	a, b := w.Open(3), w.Open(4)
	for range 50 {
		a.CountRx(false, 10)
		b.CountRx(false, 10)
	}
	a.SetRxQueue(9, 900)
	a.SetRxQueue(2, 200)
	r := w.OpenRing(TransportSHM, "r")
	r.CountRx(5)
	w.Select().CountCall()
	seg := openReader(t, w)
	if err := seg.Zero(func(fd int) bool { return fd == 3 }); err != nil {
		t.Fatal(err)
	}
	snap := snapshot(t, seg)
	ca, cb := findFD(t, snap, 3).Counters, findFD(t, snap, 4).Counters
	if ca.RxPackets != 0 || ca.RxBytes != 0 || ca.RxQueuePktsMax != 2 || ca.RxQueueByteMax != 200 || ca.RxQueuePackets != 2 {
		t.Errorf("zeroed socket %+v", ca)
	}
	if cb.RxPackets != 50 {
		t.Errorf("filtered-out socket lost its counters: %+v", cb)
	}
	if snap.Rings[0].RxPackets != 0 || snap.Iomux[0].Calls != 0 || snap.Global.SocketsOpened != 0 {
		t.Errorf("rings/iomux/global not zeroed: %+v %+v %+v", snap.Rings[0], snap.Iomux[0], snap.Global)
	}
	if snap.Global.SocketsCurrent != 2 {
		t.Errorf("gauge zeroed: %+v", snap.Global)
	}
	if snap.ZeroEpoch != 1 {
		t.Errorf("zero epoch %d", snap.ZeroEpoch)
	}
	for range 17 {
		a.CountRx(false, 10)
	}
	if got := findFD(t, snapshot(t, seg), 3).Counters.RxPackets; got != 17 {
		t.Errorf("after zero counted %d, want 17", got)
	}
}

// churnCheck verifies the invariants of a socket opened by churn.
func churnCheck(s SocketSnapshot) error {
	fd := s.FD
	if fd < 1000 {
		return nil
	}
	switch {
	case s.Inode != uint64(fd)*7:
		return fmt.Errorf("fd %d inode %d", fd, s.Inode)
	case s.Local.Port() != uint16(fd%60000+1):
		return fmt.Errorf("fd %d port %d", fd, s.Local.Port())
	case s.RuleLine != 0 && (s.RuleLine != fd || s.Rule != "churn "+strconv.Itoa(fd)):
		return fmt.Errorf("fd %d rule %d %q", fd, s.RuleLine, s.Rule)
	case s.Counters.RxPackets > uint64(fd%5):
		return fmt.Errorf("fd %d has %d rx packets, at most %d were counted", fd, s.Counters.RxPackets, fd%5)
	}
	return nil
}

// TestSeqlockTorture opens and closes thousands of slots with metadata
// derived from the fd while a reader snapshots in a tight loop: no snapshot
// may show a slot whose metadata or counters mix two sockets.
func TestSeqlockTorture(t *testing.T) {
	w := newWriter(t, 16)
	seg := openReader(t, w)
	const n = 100000
	done := make(chan struct{})
	go func() {
		defer close(done)
		var open []*Socket
		for i := range n {
			fd := 1000 + i
			s := w.Open(fd)
			// Metadata in two steps: a reader may see the first without
			// the second, but never a mix with another fd.
			s.SetInfo(SocketInfo{Family: 2, Type: 2, Inode: uint64(fd) * 7})
			s.SetAddrs(netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), uint16(fd%60000+1)), netip.AddrPort{})
			s.SetRule(fd, "churn "+strconv.Itoa(fd))
			for range fd % 5 {
				s.CountRx(false, 1)
			}
			open = append(open, s)
			if len(open) == 12 {
				w.CloseSocket(open[0])
				open[0].CountRx(false, 1) // a stale handle must not leak into the next occupant
				open = open[1:]
			}
		}
	}()
	snaps, seen := 0, 0
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-done:
			if snaps < 10 {
				t.Logf("only %d snapshots during the churn", snaps)
			}
			t.Logf("%d snapshots, %d socket slots checked", snaps, seen)
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("churn did not finish in 30s")
		}
		snap := snapshot(t, seg)
		snaps++
		for _, s := range snap.Sockets {
			seen++
			// A slot is published by Open with fd set and the rest zero;
			// SetInfo and SetAddrs follow. Check what is set.
			if s.Inode == 0 {
				continue
			}
			if s.Local.IsValid() || s.RuleLine != 0 {
				if err := churnCheck(s); err != nil {
					t.Fatalf("inconsistent slot %d gen %d: %v", s.Slot, s.Gen, err)
				}
			} else if s.Inode != uint64(s.FD)*7 {
				t.Fatalf("inconsistent slot %d: fd %d inode %d", s.Slot, s.FD, s.Inode)
			}
		}
	}
}

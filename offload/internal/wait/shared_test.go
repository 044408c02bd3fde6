package wait

import (
	"syscall"
	"testing"
	"time"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// setShared makes the process placed or not and forgets what earlier yields found, for the rest
// of the test; yields sleep for *took each (0: return at once) and are counted in *n.
func setShared(t *testing.T, isPlaced bool, took *time.Duration, n *int) {
	t.Helper()
	wasYield, wasPlaced := yield, placed
	until, streak := shared.until.Load(), shared.streak.Load()
	t.Cleanup(func() {
		yield, placed = wasYield, wasPlaced
		shared.until.Store(until)
		shared.streak.Store(streak)
	})
	placed = func() bool { return isPlaced }
	shared.until.Store(0)
	shared.streak.Store(0)
	handoff.Store(false) // a Handoff of another test would make a spin's first poll yield
	yield = func() {
		*n++
		if *took > 0 {
			time.Sleep(*took)
		}
	}
}

// TestSharedCPU: slow yields of a process placed on some CPUs only (another thread ran on its
// CPU meanwhile) make its spins yield at every poll, look at the kernel at every poll
// (Look.Shared) and sleep after sysc.YieldAfter; yields that return at once leave it as it was;
// an unplaced process never counts its CPU as shared.
func TestSharedCPU(t *testing.T) {
	setCrowd(t, false)
	var took time.Duration
	yields := 0
	setShared(t, true, &took, &yields)

	// Nothing shared yet: a full-speed spin (no turn within these polls, so no yield whatever
	// the time they take).
	var s Spin
	s.Begin(sysc.Nanotime())
	for range sysc.YieldEvery - 1 {
		s.Poll(0)
	}
	if yields != 0 || s.Shared() {
		t.Fatalf("a fresh spin yielded %d times (shared %v), want full speed", yields, s.Shared())
	}
	// Yields that return at once leave the CPU unshared.
	for range sharedYields {
		timedYield()
	}
	if Shared(sysc.Nanotime()) {
		t.Fatalf("fast yields made the CPU shared")
	}

	// Slow yields: shared after sharedYields of them in a row, not before.
	took = 2 * sharedYield * time.Nanosecond
	for i := range sharedYields {
		got := timedYield()
		if want := i == sharedYields-1; got != want {
			t.Fatalf("slow yield %d: shared %v, want %v", i+1, got, want)
		}
	}
	// A spin that begins now yields at every poll and says so in its looks (the yields return
	// at once now: the CPU stays shared for sharedTTL, here made long enough for a slow test).
	took = 0
	yields = 0
	shared.until.Store(sysc.Nanotime() + int64(time.Minute))
	s.Begin(sysc.Nanotime())
	for i := range sysc.YieldEvery - 1 {
		if !s.Poll(0) {
			t.Fatalf("a shared spin stopped at poll %d, before sysc.YieldAfter", i+1)
		}
	}
	if yields != sysc.YieldEvery-1 || !s.Shared() {
		t.Errorf("shared spin: %d yields in %d polls (shared %v), want one per poll", yields, sysc.YieldEvery-1, s.Shared())
	}
	// Past sysc.YieldAfter it sleeps instead of spinning on.
	s.start = sysc.Nanotime() - 2*sysc.YieldAfter
	stopped := false
	for range sysc.YieldEvery {
		if !s.Poll(0) {
			stopped = true
			break
		}
	}
	if !stopped {
		t.Errorf("a shared spin went on past sysc.YieldAfter")
	}

	// Loop hands Look.Shared to the call's looks.
	shared.until.Store(sysc.Nanotime() + int64(time.Minute))
	var sharedLooks, looks int
	var w Call
	Loop(&w, Policy{Polls: 10}, Steps{
		Try: func(l Look) (int, syscall.Errno, bool) {
			looks++
			if l.Shared {
				sharedLooks++
			}
			return 0, 0, looks == 5
		},
		Sleep: func() (int, syscall.Errno, bool) { return 0, 0, false },
	})
	if sharedLooks != 4 {
		t.Errorf("%d of %d looks said Shared, want every look after the first", sharedLooks, looks)
	}
}

// TestSharedNeedsPlacement: a process that may run on every CPU ignores slow yields (the crowd
// decides for it).
func TestSharedNeedsPlacement(t *testing.T) {
	setCrowd(t, false)
	took := 2 * sharedYield * time.Nanosecond
	yields := 0
	setShared(t, false, &took, &yields)
	for range 3 * sharedYields {
		if timedYield() {
			t.Fatalf("an unplaced process counted its CPU as shared")
		}
	}
	if yields != 3*sharedYields || Shared(sysc.Nanotime()) {
		t.Errorf("%d yields, shared %v: want %d yields and no shared CPU", yields, Shared(sysc.Nanotime()), 3*sharedYields)
	}
}

// TestSharedPeerTurns: yields as long as a peer's turn in a ping-pong with both ends on one CPU
// (2-3 us: two context switches and the peer's send) make the CPU shared and keep it shared for
// as long as they go on, past sharedTTL. Counted fast (the 5 us of before), they let it lapse
// every sharedTTL, and the next wait spun sysc.YieldAfter before it yielded: that ping-pong's
// p99.9, 54 us against the kernel's ~32.
func TestSharedPeerTurns(t *testing.T) {
	setCrowd(t, false)
	var took time.Duration
	yields := 0
	setShared(t, true, &took, &yields)
	yield = func() { // the peer's turn: 2.5 us on the CPU, no sleep
		yields++
		for end := sysc.Nanotime() + 2500; sysc.Nanotime() < end; {
		}
	}
	for range sharedYields {
		timedYield()
	}
	if !Shared(sysc.Nanotime()) {
		t.Fatalf("%d yields of a peer's turn left the CPU unshared", yields)
	}
	for end := sysc.Nanotime() + 3*sharedTTL; sysc.Nanotime() < end; {
		timedYield()
	}
	if !Shared(sysc.Nanotime()) {
		t.Fatalf("the CPU stopped counting as shared while peers' turns went on (%d yields)", yields)
	}
}

package wait

import (
	"os"
	"sync/atomic"
	"testing"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// TestMain keeps the tests' spins from ending at a preemption of the test process (a loaded
// machine, the race detector): their sequences of polls and sleeps are fixed.
// TestPreemptedSpinSleeps sets the limit back.
func TestMain(m *testing.M) {
	gapLimit = 1 << 62
	os.Exit(m.Run())
}

// TestPreemptedSpinSleeps: a spin whose clock reads are more than preemptGap apart (it lost
// its CPU for a time slice) ends, and the process's spins that begin within preemptCold end at
// their first poll; a sleep between two reads is no preemption; spins after preemptCold spin.
func TestPreemptedSpinSleeps(t *testing.T) {
	setCrowd(t, false)
	gapLimit = preemptGap
	t.Cleanup(func() { gapLimit = 1 << 62; coldUntil.Store(0) })
	t0 := sysc.Nanotime()
	polls := func(s *Spin, at int64) (n int) {
		for n = 1; n <= sysc.YieldEvery; n++ {
			if !s.Poll(at) {
				return n
			}
		}
		return 0
	}
	var s Spin
	s.Begin(t0)
	if n := polls(&s, t0+preemptGap/2); n != 0 {
		t.Fatalf("a spin read its clock %d ns after its start and ended at poll %d", int64(preemptGap/2), n)
	}
	before := preempts.Load()
	if n := polls(&s, t0+preemptGap/2+preemptGap+1); n != sysc.YieldEvery {
		t.Fatalf("a spin preempted for more than %d ns ended at poll %d, want its turn's (%d)", int64(preemptGap), n, sysc.YieldEvery)
	}
	if preempts.Load() != before+1 {
		t.Errorf("preemptions counted %d, want 1", preempts.Load()-before)
	}
	at := t0 + preemptGap/2 + preemptGap + 2
	s.Begin(at + preemptCold - 10)
	if s.Poll(0) {
		t.Errorf("a spin that began %d ns after a preemption spun, want none for %d ns", int64(preemptCold-10), int64(preemptCold))
	}
	s.Begin(at + preemptCold + 1)
	if n := polls(&s, at+preemptCold+2); n != 0 {
		t.Errorf("a spin after the cold time ended at poll %d", n)
	}
	// A sleep is no preemption: the wait looks again (LookAgain) and the gaps start anew.
	s.Begin(at + preemptCold + 3)
	s.LookAgain()
	if n := polls(&s, at+preemptCold+3+10*preemptGap); n != 0 {
		t.Errorf("a spin after a sleep ended at poll %d", n)
	}
}

// TestWokeCrowdYields: a spin that begins after this process woke a thread (Woke, or a doorbell
// the preload library rang: the rang word) looks at the crowd at its first poll, and gives its
// CPU away once when the woken thread has none (more runnable threads than CPUs), without
// counting that look toward a crowd (its waits keep spinning). Without a wake-up the spin does
// not look, and does not yield; the rang word is taken back to 0.
func TestWokeCrowdYields(t *testing.T) {
	t.Run("engine", func(t *testing.T) { wokeCrowdYields(t, Woke) })
	t.Run("preload", func(t *testing.T) {
		var w atomic.Uint32
		UseRangWord(&w)
		t.Cleanup(func() { rangWord.Store(nil) })
		wokeCrowdYields(t, func() { w.Store(1) })
		if w.Load() != 0 {
			t.Errorf("rang word %d after the spin took it, want 0", w.Load())
		}
	})
}

// wokeCrowdYields is TestWokeCrowdYields with wake as the wake-up.
func wokeCrowdYields(t *testing.T, wake func()) {
	setCrowd(t, false)
	crowd.at.Store(0)
	crowd.woken.Store(false) // a look of another test after its Woke may have found a crowd
	crowd.streak.Store(0)
	shared.until.Store(0)
	tookHandoff()
	wasYield, wasCPUs := yield, onlineCPUs
	yields := 0
	yield = func() { yields++ }
	onlineCPUs = func() int { return 2 }
	t.Cleanup(func() { yield, onlineCPUs = wasYield, wasCPUs })
	useLoadavg(t, 3)

	now := sysc.Nanotime()
	Crowded(now) // a look that stands: the spin below does not look
	streak := crowd.streak.Load()
	var s Spin
	s.Begin(now + 1)
	if !s.Poll(now+2) || yields != 0 {
		t.Fatalf("without a wake-up: %d yields at the first poll, want a spin without one", yields)
	}
	wake()
	s.Begin(now + 3)
	if !s.Poll(now + 4) {
		t.Fatalf("the spin after a wake-up ended at its first poll")
	}
	if yields != 1 {
		t.Errorf("after a wake-up with 3 runnable threads for 2 CPUs: %d yields, want 1", yields)
	}
	if crowd.yes.Load() || crowd.streak.Load() != streak {
		t.Errorf("the look after a wake-up counted toward a crowd (yes %v, streak %d -> %d)", crowd.yes.Load(), streak, crowd.streak.Load())
	}
	yields = 0
	for range sysc.YieldEvery - 2 {
		s.Poll(now + 5)
	}
	if yields != 0 {
		t.Errorf("%d more yields after the one", yields)
	}
}

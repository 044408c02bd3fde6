package wait

import (
	"sync/atomic"
	"testing"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// TestHandoffYieldsOnce: after a Handoff the next spin, full-speed or eager, gives the CPU away at
// its first poll and only then (its other polls before sysc.YieldAfter spin at full speed); the
// spin after it does not (the handoff was taken); on a crowded machine the spin yields at every
// poll as before, with no extra yield.
func TestHandoffYieldsOnce(t *testing.T) {
	was := yield
	t.Cleanup(func() { yield = was })
	yields := 0
	yield = func() { yields++ }
	polls := func(s *Spin) int {
		yields = 0
		for range sysc.YieldEvery - 1 {
			if !s.Poll(0) {
				t.Fatalf("a spin ended before its first look")
			}
		}
		return yields
	}
	setCrowd(t, false)
	tookHandoff() // none left over from another test

	var s Spin
	s.Begin(sysc.Nanotime())
	if n := polls(&s); n != 0 {
		t.Fatalf("no handoff: %d yields in %d polls, want 0", n, sysc.YieldEvery-1)
	}
	Handoff()
	Handoff() // twice before a spin: still one yield
	s.Begin(sysc.Nanotime())
	if n := polls(&s); n != 1 {
		t.Errorf("after a handoff: %d yields in %d polls, want 1", n, sysc.YieldEvery-1)
	}
	s.Begin(sysc.Nanotime())
	if n := polls(&s); n != 0 {
		t.Errorf("the spin after the handoff's: %d yields, want 0 (the handoff is taken once)", n)
	}
	Handoff()
	s.BeginEager()
	if n := polls(&s); n != 1 {
		t.Errorf("eager spin after a handoff: %d yields in %d polls, want 1", n, sysc.YieldEvery-1)
	}

	setCrowd(t, true)
	Handoff()
	s.Begin(sysc.Nanotime())
	if n := polls(&s); n != sysc.YieldEvery-1 {
		t.Errorf("crowded, after a handoff: %d yields in %d polls, want %d (one a poll, none extra)", n, sysc.YieldEvery-1, sysc.YieldEvery-1)
	}
}

// TestHandoffWord: a kernel send made without the engine sets the preload library's word
// (UseHandoffWord); the next spin yields once at its first poll and sets the word back to 0, the
// spin after it does not yield; both sources at once still make one yield.
func TestHandoffWord(t *testing.T) {
	was := yield
	t.Cleanup(func() { yield = was; handoffWord.Store(nil) })
	yields := 0
	yield = func() { yields++ }
	setCrowd(t, false)
	tookHandoff()
	var w atomic.Uint32
	UseHandoffWord(&w)
	spin := func() int {
		yields = 0
		var s Spin
		s.Begin(sysc.Nanotime())
		for range sysc.YieldEvery - 1 {
			s.Poll(0)
		}
		return yields
	}
	w.Store(1)
	if n := spin(); n != 1 || w.Load() != 0 {
		t.Fatalf("after a send of the preload library: %d yields, word %d; want 1 and 0", n, w.Load())
	}
	if n := spin(); n != 0 {
		t.Errorf("the spin after: %d yields, want 0", n)
	}
	w.Store(1)
	Handoff()
	if n := spin(); n != 1 || w.Load() != 0 {
		t.Errorf("both sources: %d yields, word %d; want 1 and 0", n, w.Load())
	}
}

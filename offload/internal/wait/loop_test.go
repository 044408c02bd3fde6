package wait

import (
	"bytes"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/transporttest"
)

// trace runs Loop with steps that record what the loop did: 't' a look, 'M'/'m' marks taken and
// given back, 'S' a sleep; the call ends at the look numbered end with result 7.
func trace(t *testing.T, p Policy, canSpin func() bool, marks bool, end int) (string, int, syscall.Errno) {
	t.Helper()
	var log []byte
	looks := 0
	var w Call
	s := Steps{
		Try: func(l Look) (int, syscall.Errno, bool) {
			log = append(log, 't')
			looks++
			if looks == end {
				return 7, 0, true
			}
			return 0, 0, false
		},
		CanSpin: canSpin,
		Sleep: func() (int, syscall.Errno, bool) {
			log = append(log, 'S')
			return 0, 0, false
		},
	}
	if marks {
		s.Mark = func(on bool) {
			if on {
				log = append(log, 'M')
			} else {
				log = append(log, 'm')
			}
		}
	}
	n, errno := Loop(&w, p, s)
	return string(log), n, errno
}

// setCrowd pins Crowded's answer to yes for the rest of the test (the machine the tests run on
// may be crowded or not).
func setCrowd(t *testing.T, yes bool) {
	at, was := crowd.at.Load(), crowd.yes.Load()
	crowd.at.Store(1 << 62) // a look from the future stands
	crowd.yes.Store(yes)
	t.Cleanup(func() { crowd.at.Store(at); crowd.yes.Store(was) })
}

func TestLoopSpinsThenSleeps(t *testing.T) {
	setCrowd(t, false)
	cases := []struct {
		name  string
		p     Policy
		can   func() bool
		marks bool
		end   int
		want  string
	}{
		{"budget of 2 polls, marks, one more look", Policy{Polls: 2}, nil, true, 5, "tMttmtSt"},
		{"no marks: no extra look", Policy{Polls: 2}, nil, false, 4, "tttSt"},
		{"cold socket: no spin", Policy{Polls: 2, Cold: true}, nil, true, 3, "tStSt"},
		{"may not spin", Policy{Polls: 2}, func() bool { return false }, true, 3, "tStSt"},
		{"respin after a sleep", Policy{Polls: 1, Respin: true}, nil, false, 4, "ttStt"},
		{"no budget", Policy{}, nil, true, 2, "tSt"},
	}
	for _, c := range cases {
		got, n, errno := trace(t, c.p, c.can, c.marks, c.end)
		if got != c.want || n != 7 || errno != 0 {
			t.Errorf("%s: %q -> %d %v, want %q -> 7", c.name, got, n, errno, c.want)
		}
	}
}

// TestLoopCrowded: on a crowded machine a wait that spins (whatever its budget: VMA_RX_POLL -1
// too) stops at its first look at the crowd (a spin's yields; at once after a sleep) and sleeps,
// then sleeps at once after every sleep; it spins again after a sleep once the crowd is gone.
// A spin's start does not look (a look reads /proc/loadavg: no cost for a ping-pong's short spins).
func TestLoopCrowded(t *testing.T) {
	setCrowd(t, true)
	for _, p := range []Policy{{Polls: -1}, {Polls: -1, Eager: true}, {Timed: true, Budget: -1}} {
		var log []byte
		sleeps := 0
		var w Call
		Loop(&w, p, Steps{
			Try: func(Look) (int, syscall.Errno, bool) {
				log = append(log, 't')
				return 0, 0, sleeps == 3
			},
			Sleep: func() (int, syscall.Errno, bool) {
				log = append(log, 'S')
				sleeps++
				return 0, 0, false
			},
		})
		i := bytes.IndexByte(log, 'S')
		if i < 0 || string(log[i:]) != "StStSt" {
			t.Errorf("%+v, crowded: %q, want a spin that stops, then StStSt (no spin after a sleep)", p, log)
		}
	}
	// The crowd leaves during the first sleep: the wait spins again.
	var log []byte
	sleeps, tries := 0, 0
	var w Call
	Loop(&w, Policy{Polls: -1}, Steps{
		Try: func(Look) (int, syscall.Errno, bool) {
			log = append(log, 't')
			tries++
			return 0, 0, sleeps == 1 && tries > 100
		},
		Sleep: func() (int, syscall.Errno, bool) {
			log = append(log, 'S')
			sleeps++
			crowd.yes.Store(false)
			return 0, 0, false
		},
	})
	if i := bytes.IndexByte(log, 'S'); i < 0 || bytes.Count(log, []byte("S")) != 1 {
		t.Errorf("crowd gone after the first sleep: %d sleeps, want 1 then spinning", bytes.Count(log, []byte("S")))
	}
}

// TestCrowdedSpinYields: a spin that starts on a machine the last look found crowded gives the
// CPU away at every poll, looks at the crowd again at its turns, and stops yielding (spinning at
// full speed, as on a machine that is not crowded) once a look finds the crowd gone.
func TestCrowdedSpinYields(t *testing.T) {
	was := yield
	t.Cleanup(func() { yield = was })
	yields := 0
	yield = func() { yields++ }
	for _, crowded := range []bool{false, true} {
		setCrowd(t, crowded)
		yields = 0
		var s Spin
		s.Begin(sysc.Nanotime())
		for range sysc.YieldEvery - 1 {
			if !s.Poll(0) {
				t.Fatalf("crowded %v: a spin ended before its first look", crowded)
			}
		}
		want := 0
		if crowded {
			want = sysc.YieldEvery - 1
		}
		if yields != want {
			t.Errorf("crowded %v: %d yields in %d polls, want %d", crowded, yields, sysc.YieldEvery-1, want)
		}
	}
	// The crowd leaves: the turn's look (due: the last one is old) finds no crowd, and the next
	// polls spin without yielding.
	setCrowd(t, true)
	crowd.at.Store(0)
	was2 := onlineCPUs
	t.Cleanup(func() { onlineCPUs = was2 })
	onlineCPUs = func() int { return 1 << 20 } // no machine has more runnable threads
	var s Spin
	s.Begin(sysc.Nanotime())
	for range sysc.YieldEvery {
		s.Poll(0)
	}
	if crowd.yes.Load() {
		t.Fatalf("the turn's look did not find the crowd gone")
	}
	yields = 0
	for range sysc.YieldEvery - 1 {
		s.Poll(0)
	}
	if yields != 0 {
		t.Errorf("%d yields after the crowd left, want 0", yields)
	}
}

func TestLoopEndsAsTheSignalsSay(t *testing.T) {
	var sig transport.SigCounters
	signals := func() *transport.SigCounters { return &sig }
	sleeps := 0
	s := Steps{
		Try: func(Look) (int, syscall.Errno, bool) { return 0, 0, false },
		Sleep: func() (int, syscall.Errno, bool) {
			sleeps++
			if sleeps == 1 {
				atomic.AddUint32(&sig.All, 1) // an SA_RESTART handler: a receive waits on
			} else {
				atomic.AddUint32(&sig.Interrupting, 1)
			}
			return 0, 0, false
		},
	}
	var w Call
	if n, errno := Loop(&w, Policy{Signals: signals}, s); n != -1 || errno != unix.EINTR || sleeps != 2 {
		t.Fatalf("receive: %d %v after %d sleeps, want EINTR after 2", n, errno, sleeps)
	}
	sleeps = 0
	var m Call
	transporttest.EnterCall(&sig) // a new call
	m.StartWith(0, &sig)
	if n, errno := Loop(&m, Policy{Timed: true, AnySignal: true}, s); n != -1 || errno != unix.EINTR || sleeps != 1 {
		t.Fatalf("select: %d %v after %d sleeps, want EINTR after 1", n, errno, sleeps)
	}
}

func TestLoopAllocates(t *testing.T) {
	var w Call
	looks := 0
	allocs := testing.AllocsPerRun(100, func() {
		looks = 0
		w = Call{}
		Loop(&w, Policy{Polls: 3}, Steps{
			Try: func(Look) (int, syscall.Errno, bool) {
				looks++
				return looks, 0, looks == 5
			},
			Mark:  func(bool) { looks += 0 },
			Sleep: func() (int, syscall.Errno, bool) { return 0, 0, false },
		})
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per wait, want 0", allocs)
	}
}

// TestCrowdedLooksSooner: a look that found no crowd stands for crowdTTL, one that found a crowd
// only for crowdedTTL.
func TestCrowdedLooksSooner(t *testing.T) {
	setCrowd(t, true)
	now := sysc.Nanotime()
	last := now - 2*crowdedTTL
	crowd.at.Store(last)
	crowd.yes.Store(false)
	Crowded(now)
	if crowd.at.Load() != last {
		t.Errorf("a look without crowd %d ns old was made again", int64(2*crowdedTTL))
	}
	crowd.yes.Store(true)
	Crowded(now)
	if crowd.at.Load() != now {
		t.Errorf("a look with crowd %d ns old stood", int64(2*crowdedTTL))
	}
}

// TestWokeLooksAgain: after Woke the next Crowded reads the runnable count again, although the
// last look would still stand.
func TestWokeLooksAgain(t *testing.T) {
	setCrowd(t, true)
	now := sysc.Nanotime()
	Crowded(now)
	if crowd.at.Load() != 1<<62 {
		t.Fatalf("a standing look was made again")
	}
	Woke()
	Crowded(now)
	if crowd.at.Load() != now {
		t.Fatalf("after Woke: last look at %d, want %d (looked again)", crowd.at.Load(), now)
	}
}

// TestPlacedProcessReadsNoLoad: a process placed on some CPUs only (onlineCPUs 0) is never
// crowded and its looks read nothing; on the whole machine each look that is due reads the
// runnable count.
func TestPlacedProcessReadsNoLoad(t *testing.T) {
	was := onlineCPUs
	t.Cleanup(func() { onlineCPUs = was })
	setCrowd(t, false)
	for _, tc := range []struct {
		cpus  int
		reads int64
	}{{0, 0}, {2, 3}} {
		onlineCPUs = func() int { return tc.cpus }
		before := crowd.reads.Load()
		now := sysc.Nanotime()
		for i := range 3 {
			crowd.at.Store(0) // every look is due
			if Crowded(now + int64(i)) {
				if tc.cpus == 0 {
					t.Fatalf("a placed process was found crowded")
				}
			}
		}
		if got := crowd.reads.Load() - before; got != tc.reads {
			t.Errorf("%d CPUs: %d reads of the runnable count in 3 looks, want %d", tc.cpus, got, tc.reads)
		}
	}
}

// TestLoopLastLook: a call that a signal or its timeout ends looks once more, everywhere
// (Look.Last), and returns what that look finds: the kernel's calls look at their queues
// before they give up.
func TestLoopLastLook(t *testing.T) {
	var sig transport.SigCounters
	lasts := 0
	s := Steps{
		Try: func(l Look) (int, syscall.Errno, bool) {
			if l.Last {
				lasts++
				return 6, 0, true // the datagram in the kernel's queue
			}
			return 0, 0, false
		},
		Sleep: func() (int, syscall.Errno, bool) {
			atomic.AddUint32(&sig.All, 1) // a handler without SA_RESTART
			atomic.AddUint32(&sig.Interrupting, 1)
			return 0, 0, false
		},
	}
	var w Call
	if n, errno := Loop(&w, Policy{Signals: func() *transport.SigCounters { return &sig }}, s); n != 6 || errno != 0 || lasts != 1 {
		t.Fatalf("receive: %d %v after %d last looks, want 6 after 1", n, errno, lasts)
	}
	lasts = 0
	var m Call
	transporttest.EnterCall(&sig) // a new call
	m.StartWith(0, &sig)
	if n, errno := Loop(&m, Policy{Timed: true, AnySignal: true}, s); n != 6 || errno != 0 || lasts != 1 {
		t.Fatalf("select: %d %v after %d last looks, want 6 after 1", n, errno, lasts)
	}
	// A last look that finds nothing: the verdict stands.
	s.Try = func(l Look) (int, syscall.Errno, bool) { return 0, 0, false }
	var e Call
	if n, errno := Loop(&e, Policy{Signals: func() *transport.SigCounters { return &sig }}, s); n != -1 || errno != unix.EINTR {
		t.Fatalf("receive with nothing queued: %d %v, want EINTR", n, errno)
	}
}

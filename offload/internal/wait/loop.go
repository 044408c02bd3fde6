package wait

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// Policy is how a Loop waits: its polling budget, how its spinning starts, and what ends it.
type Policy struct {
	// Polls is the polling budget in polls (VMA_RX_POLL): spin up to Polls looks before
	// sleeping; < 0: until the data comes or the call ends. Unused when Timed.
	Polls int
	// Timed makes the budget a time: Budget nanoseconds of spinning from the call's start
	// (VMA_SELECT_POLL), < 0 without end; the spinning stops at Until too (a sysc.Nanotime,
	// 0: none).
	Timed  bool
	Budget int64
	Until  int64
	// Cold skips the spinning of a call whose socket's waits are typically long
	// (Avg.SpinWorth false); once one spell began it runs its budget.
	Cold bool
	// Look makes a spell look at the crowd when it starts (crowd.go), for a socket whose waits
	// are not a ping-pong's (Avg.Long): the look (a read of /proc/loadavg) is not paid by short
	// waits, which look only at a long spin's yields and after a sleep.
	Look bool
	// Eager starts each spell with an eager Spin (BeginEager), the full-speed start otherwise.
	Eager bool
	// Respin gives the call a new spell after each sleep (the budget counts from the wake-up).
	Respin bool
	// Timeout and Signals start a call that is not started yet (Call.Start) after its first
	// look found nothing: SO_RCVTIMEO or SO_SNDTIMEO, and the thread's signal counters.
	Timeout int64
	Signals func() *transport.SigCounters
	// Claim makes a wait that sleeps without spinning count as held (held.go) while it sleeps,
	// if the runnable threads and the held waits fill the machine's CPUs as it goes to sleep
	// (claim.go), for claimLasts at most: a receive whose data comes too late to spin for, but
	// often (Avg.Claims).
	Claim bool
	// AnySignal ends the call with EINTR after any signal handler (select, poll and
	// epoll_wait: Call.Interrupted) instead of the rules of a blocking receive (Call.Check).
	AnySignal bool
}

// Look is what the loop tells a call's Try.
type Look struct {
	Round    int  // looks made before this one
	Polls    int  // spin polls of the current spell
	Spinning bool // the call spins (its marks are taken)
	// Shared: the spin treats its CPU as shared (shared.go); every poll is a yield, so the
	// kernel's fds are worth a look at each.
	Shared bool
	// Last: the call ends now (a signal handler ran, or the timeout expired) unless this look
	// finds its result; it must look everywhere, the kernel socket too. The kernel's blocking
	// calls look at their queues before they give up to a signal or a timeout: a datagram that
	// was in the socket's kernel queue all along is returned, never EINTR.
	Last bool
}

// Steps is what a blocking call supplies to Loop: function values, which Loop only calls (a
// closure over the caller's variables stays on its stack: no allocation per call).
type Steps struct {
	// Try looks once for the call's result: done ends the call with n and errno.
	Try func(l Look) (n int, errno syscall.Errno, done bool)
	// CanSpin, when set, says whether the call may spin now (else it sleeps).
	CanSpin func() bool
	// Mark, when set, takes (true) or gives back (false) the call's spin marks, by which its
	// peers skip their wake-ups; after giving them back the loop looks once more before
	// sleeping (a peer that skipped its wake-up in between left the data there).
	Mark func(on bool)
	// Sleep sleeps in the kernel on the call's fds, for at most the time the call's wait has
	// left (Call.Timeout): done ends the call with n and errno; otherwise the
	// loop looks again (after EINTR, the signal counters decide whether the call ends). (The
	// closure reaches the wait through its own variable: a pointer passed to a function value
	// would move the wait to the heap.)
	Sleep func() (n int, errno syscall.Errno, done bool)
}

// Loop is the engine's one wait: look (Try), end the call as its signal counters and deadline
// say, spin within the policy's budget (Mark, Spin's yields), sleep (Sleep), and again. w is
// the call's wait: started already (select, poll, epoll_wait) or started by Loop after the
// first look (a receive's data found at once costs no clock read).
func Loop(w *Call, p Policy, s Steps) (int, syscall.Errno) {
	var l Look
	var spin Spin
	spell := false // a spell of spinning began (spin holds its start)
	if p.Timed {
		spin.Begin(w.Begin)
		spell = true
	}
	for ; ; l.Round++ {
		if n, errno, done := s.Try(l); done {
			return n, errno
		}
		if !w.Started {
			w.Start(p.Timeout, p.Signals)
		}
		if errno := p.verdict(w); errno != 0 {
			l.Last = true
			if n, e, done := s.Try(l); done {
				return n, e
			}
			return -1, errno
		}
		if (s.CanSpin == nil || s.CanSpin()) && p.spinMore(&l, &spin, &spell, w) {
			if !l.Spinning {
				l.Spinning = true
				if s.Mark != nil {
					s.Mark(true)
				}
			}
			continue
		}
		if l.Spinning {
			l.Spinning = false
			if s.Mark != nil {
				s.Mark(false)
				continue // one more look before sleeping
			}
		}
		slot, claim := -1, -1
		if spin.TakeHeld() {
			countCrowdSleep()
			if p.endless() {
				slot = holdEnter()
			}
		} else if p.Claim {
			if now := sysc.Nanotime(); filled(now) {
				claim = claimEnter(now)
			}
		}
		n, errno, done := s.Sleep()
		holdLeave(slot)
		claimLeave(claim)
		if done {
			return n, errno
		}
		spin.LookAgain()
		if p.Respin {
			l.Polls, spell = 0, false
		}
	}
}

// endless reports whether the policy polls without end (VMA_RX_POLL=-1, VMA_SELECT_POLL=-1):
// only such a wait counts as held while a crowd keeps it asleep (held.go). A wait with a budget
// sleeps after it anyway; counted, its sleeps made the others sleep too where they had handed
// their CPUs to each other (nginx's workers and wrk, three busy processes for two CPUs: 5% fewer
// requests/s).
func (p *Policy) endless() bool {
	if p.Timed {
		return p.Budget < 0
	}
	return p.Polls < 0
}

// verdict is the errno that ends the call now (a signal handler ran, the timeout expired), or 0.
func (p *Policy) verdict(w *Call) syscall.Errno {
	if p.AnySignal {
		if w.Interrupted() {
			return unix.EINTR
		}
		return 0
	}
	return w.Check()
}

// spinMore decides whether the call spins one more poll, and counts the poll (Spin's yields).
func (p *Policy) spinMore(l *Look, spin *Spin, spell *bool, w *Call) bool {
	if p.Timed {
		now := sysc.Nanotime()
		more := spin.Poll(now)
		l.Shared = spin.Shared()
		if !more {
			return false
		}
		if p.Until != 0 && now >= p.Until {
			return false
		}
		return p.Budget < 0 || spin.Elapsed(now) < p.Budget
	}
	if !(p.Polls < 0 || l.Polls < p.Polls && (l.Polls > 0 || !p.Cold)) {
		return false
	}
	if !*spell {
		*spell = true
		switch {
		case p.Eager:
			spin.BeginEager()
		case !p.Respin:
			spin.Begin(w.Begin) // the one spell: the clock read of the call's start, one fewer
		default:
			spin.Begin(sysc.Nanotime())
		}
		if p.Look {
			spin.LookAgain()
		}
	}
	l.Polls++
	more := spin.Poll(0)
	l.Shared = spin.Shared()
	return more
}

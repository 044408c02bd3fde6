// Package wait is the one wait of the engine's blocking calls in user space (a receive that
// polls rings, select, poll and epoll_wait): the time it may take (a receive's SO_RCVTIMEO, a
// poll's timeout), the signal handlers that end it with EINTR as they end a sleeping system call,
// and the spinning within the polling budget, with the one yield policy (Spin), all in one
// loop (Loop). Each caller supplies only its look at the data (Steps.Try), its spin marks
// (Steps.Mark) and its sleep on its fds (Steps.Sleep), and chooses the measured policies (Policy).
//
// One clock: sysc.Nanotime.
package wait

import (
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// Call is one blocking call's wait: its deadline and the thread's signal handlers. The zero
// value is not started.
type Call struct {
	Started  bool
	Begin    int64 // sysc.Nanotime when the wait started
	Deadline int64 // sysc.Nanotime; 0: none
	sig      *transport.SigCounters
	all      uint32
	intr     uint32
	deferred uint32
}

// Start begins the wait of a receive: timeout is SO_RCVTIMEO in nanoseconds (0: none), signals
// returns the calling thread's handler counters (nil: none).
func (w *Call) Start(timeout int64, signals func() *transport.SigCounters) {
	var sig *transport.SigCounters
	if signals != nil {
		sig = signals()
	}
	w.StartWith(timeout, sig)
}

// StartWith begins the wait with the thread's counters sig (nil: none).
func (w *Call) StartWith(timeout int64, sig *transport.SigCounters) {
	w.Started = true
	w.Begin = sysc.Nanotime()
	if timeout > 0 {
		w.Deadline = w.Begin + timeout
	}
	if sig != nil {
		// The counters as the call entered the engine, not as they are now: a handler deferred
		// between the entry and this start (the receive's first look) came during the call
		// too, and the wait must end for it (it cannot run before the call is back in C).
		w.sig = sig
		w.all, w.intr = atomic.LoadUint32(&sig.Entry[0]), atomic.LoadUint32(&sig.Entry[1])
		w.deferred = atomic.LoadUint32(&sig.Entry[2])
	}
}

// Timeout is the timeout to pass to the wait's next sleep in the kernel: the time left, at most
// limit when limit > 0; none (no deadline, no limit) is nil, or far away when the wait watches
// signal handlers. It is armed (Arm): a sleep that gets it takes an early return with nothing for
// "look again".
func (w *Call) Timeout(limit int64) *unix.Timespec {
	if w.Deadline == 0 && limit <= 0 {
		return w.Arm(nil)
	}
	left := int64(1 << 62)
	if w.Deadline != 0 {
		left = max(w.Deadline-sysc.Nanotime(), 0)
	}
	if limit > 0 {
		left = min(left, limit)
	}
	ts := unix.NsecToTimespec(left)
	return w.Arm(&ts)
}

// farAway is the timeout Arm gives a sleep that has none (about 34 years): a deferral must find
// a timeout to zero.
const farAway = 1 << 30 // seconds

// Arm is the timeout to pass to the wait's next sleep in the kernel, for ts (nil: none): the
// thread's SigCounters.Wake when the wait watches signal handlers, ts itself otherwise. The
// kernel ends a sleep with EINTR for a signal that comes during it; one that comes between the
// wait's last look and the sleep has its handler deferred (the thread is in the engine), and the
// sleep would never see it. The deferral zeroes Wake (shim/preload/signal.c), so such a sleep
// returns at once with nothing, and the wait's next look ends the call. A sleep that gets the
// result of Arm must take an early return with nothing for "look again", never for its timeout:
// the wait's deadline says when that expired (Check).
func (w *Call) Arm(ts *unix.Timespec) *unix.Timespec {
	if w.sig == nil {
		return ts
	}
	sec, nsec := int64(farAway), int64(0)
	if ts != nil {
		sec, nsec = ts.Sec, ts.Nsec
	}
	wake := &w.sig.Wake
	atomic.StoreInt64(&wake.Sec, sec)
	atomic.StoreInt64(&wake.Nsec, nsec)
	// A deferral before the stores above left its zeroes overwritten: look after them (the
	// handler runs on this thread, so program order is enough; the atomics keep the compiler's).
	if atomic.LoadUint32(&w.sig.Deferred) != w.deferred {
		atomic.StoreInt64(&wake.Sec, 0)
		atomic.StoreInt64(&wake.Nsec, 0)
	}
	return wake
}

// Check is a receive's verdict: EINTR when a handler ended the wait (one without SA_RESTART, or
// any with a receive timeout, as the kernel's blocking receive), EAGAIN when the timeout
// expired, 0 to wait on.
func (w *Call) Check() syscall.Errno {
	if w.sig != nil {
		// Deferred first: the trampoline counts a handler in Interrupting and All before it
		// counts its deferral, and may run between these loads; read the other way round, a
		// handler without SA_RESTART that came between them looked like one with it (the call
		// restarted instead of ending with EINTR, and waited for the next signal).
		deferred := atomic.LoadUint32(&w.sig.Deferred)
		if atomic.LoadUint32(&w.sig.Interrupting) != w.intr {
			return unix.EINTR
		}
		if w.Deadline != 0 && atomic.LoadUint32(&w.sig.All) != w.all {
			return unix.EINTR // with a receive timeout, even SA_RESTART does not restart
		}
		if deferred != w.deferred {
			return transport.ErrRestart // SA_RESTART handlers to run in C, then the call again
		}
	}
	if w.Deadline != 0 && sysc.Nanotime() >= w.Deadline {
		return unix.EAGAIN
	}
	return 0
}

// Cut is the errno of a sleep in the kernel of select, poll or epoll_wait that got its timeout
// from Arm and returned n ready with errno: EINTR when it returned nothing because a handler came
// (its deferral zeroed the timeout), errno otherwise.
func (w *Call) Cut(n int, errno syscall.Errno) syscall.Errno {
	if n == 0 && errno == 0 && w.Interrupted() {
		return unix.EINTR
	}
	return errno
}

// Interrupted reports whether any signal handler ran on the thread since the wait started:
// select, poll and epoll_wait end with EINTR then, SA_RESTART or not (signal(7)).
func (w *Call) Interrupted() bool {
	return w.sig != nil && atomic.LoadUint32(&w.sig.All) != w.all
}

// Spin is a wait's spinning: the polls made and when they began.
//
// The policy, the same for every wait of the engine: spin at full speed for sysc.YieldAfter, then
// give the CPU away (sched_yield) every sysc.YieldEvery polls; no spinning while the machine is
// crowded (crowd.go: looked at when a spin resumes after a sleep, and at a long spin's yields),
// nor for a while after a spin of the process lost its CPU for a time slice (preempted.go). A
// poller answers data that comes within that time at full speed (the ping-pong latencies of the
// benchmarks), and one that waits longer lets the other runnable threads of a busy machine (the
// program's sender, the peer process) run instead of waiting for the end of its time slice.
//
// One exception, chosen at Begin: an eager spin (BeginEager) yields every sysc.YieldEvery polls
// from the first. The AF_XDP receive spins so: its data is produced by a softirq or a veth peer
// that shares the CPU as often as not, and runs at once instead of after sysc.YieldAfter
// (measured on the 2-CPU test machine: sockperf ping-pong across a veth with both ends on one CPU
// went from 56 us to 6 us median; on two CPUs the yields, with nothing else to run, cost nothing
// measurable). The shared-memory receives and select/poll/epoll keep the full-speed start, which
// their ping-pong benchmarks were measured with.
//
// On a machine the last look found crowded, a spin that starts before the next look (a short
// wait does not reach the look of sysc.YieldAfter) gives the CPU away at every poll: a runnable
// thread of its CPU (the data's producer, as often as not) runs at once instead of after the
// spinner's time slice, and the spin's turns look at the crowd again (a crowd that ended stops
// the yields). Measured on the 2-CPU test machine, nginx with 2 workers and wrk under goxio (three
// busy processes for two CPUs, every wait a few microseconds): 1.2x -> 2.0x the kernel's
// requests/s with open_file_cache, 0.8x -> 1.3x without, interleaved runs; ping-pongs (two
// processes, two CPUs), sockperf under-load, TCP churn, iperf3 and redis-benchmark unchanged.
type Spin struct {
	polls  int
	start  int64
	eager  bool
	look   bool  // look at the crowd at the next poll
	hand   bool  // yield at the first poll: a kernel send came before this spin (Handoff)
	shared bool  // the CPU is shared (shared.go): yield at every poll, sleep after sysc.YieldAfter
	last   int64 // sysc.Nanotime of the spin's last clock read (preempted.go)
	cold   bool  // a wait of the process was preempted lately: no spinning (preempted.go)
	held   bool  // the last Poll ended the spinning because the machine is crowded (held.go)
}

// Begin starts the spinning at now (a sysc.Nanotime read the caller made anyway). A spin that
// starts does not look at the crowd (a look is a read of /proc/loadavg, a few microseconds: at
// every spin's start, a ping-pong's round trips paid it one in a hundred, p99.9 0.9 -> 20 us);
// a spin that lasts looks at its yields, one after a sleep at once (LookAgain).
func (s *Spin) Begin(now int64) {
	*s = Spin{start: now, last: now, look: wokeAny(), hand: tookHandoff(), shared: Shared(now), cold: cold(now)}
}

// BeginEager starts an eager spin (see Spin).
func (s *Spin) BeginEager() {
	*s = Spin{eager: true, look: wokeAny(), hand: tookHandoff(), shared: sharedNow(), cold: coldNow()}
}

// Shared reports whether the spin treats its CPU as shared (shared.go).
func (s *Spin) Shared() bool { return s.shared }

// LookAgain makes the next poll look at the crowd (the wait slept: the machine may have filled).
// The time asleep is no preemption (preempted.go): the next clock read starts the gaps anew.
func (s *Spin) LookAgain() { s.look, s.last = true, 0 }

// TakeHeld reports, and clears, whether the last Poll ended the spinning because the machine is
// crowded (each Poll clears it first): the wait's sleep then counts as held (held.go).
func (s *Spin) TakeHeld() bool {
	h := s.held
	s.held = false
	return h
}

// Elapsed is how long the spinning has lasted at now.
func (s *Spin) Elapsed(now int64) int64 { return now - s.start }

// Poll counts one poll, yields when the policy says so, and reports whether the spinning goes
// on (false: the machine is crowded, the wait sleeps); now is the time of the poll when the
// caller read the clock anyway (0: Poll reads it when it needs it).
func (s *Spin) Poll(now int64) bool {
	s.held = false
	if s.cold {
		return false
	}
	s.polls++
	crowded := crowd.yes.Load() || s.shared
	if crowded || s.hand {
		// See Spin: every poll of a crowded machine or a shared CPU; Handoff: the first after a
		// kernel send.
		s.shared = timedYield()
	}
	s.hand = false
	turn := s.polls%sysc.YieldEvery == 0
	if !turn && !s.look {
		return true
	}
	if now == 0 {
		now = sysc.Nanotime()
	}
	if s.preempted(now) {
		return false
	}
	if s.look {
		s.look = false
		if Crowded(now) {
			s.held = true
			return false
		}
		if tookWoken() {
			s.shared = timedYield()
		}
	}
	if !turn {
		return true
	}
	if s.eager && s.start == 0 {
		s.start = now // the crowd is looked at after sysc.YieldAfter of spinning, as for the others
	}
	if now-s.start <= sysc.YieldAfter {
		if crowded {
			Crowded(now) // a crowd that ended stops the yields
		} else if s.eager {
			s.shared = timedYield()
		}
		return true
	}
	if Crowded(now) {
		s.held = true
		return false
	}
	if s.shared {
		return false
	}
	if !crowded {
		s.shared = timedYield()
	}
	return true
}

// yield gives the CPU away (sysc.Yield); a variable for the tests, which count the yields.
var yield = sysc.Yield

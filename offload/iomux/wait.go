package iomux

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	"github.com/goxio/goxio/offload/transport"
)

// waiter is one select, poll or epoll_wait call over ring sockets: it polls the rings and the
// kernel, spins for the SelectPoll budget, then sleeps in the kernel, where ring traffic for a
// sleeping socket arrives as a wake datagram on the socket's kernel fd.
type waiter struct {
	e        *Mux
	socks    []transport.Endpoint // the datagram sockets on rings involved
	tcps     []transport.Endpoint // the stream sockets on rings waited for
	spun     []transport.Mark     // the marks taken on tcps while spinning
	setMarks bool                 // an epoll set's awake marks stand for the spin marks on tcps
	deadline int64                // nanotime; 0: none (forever); -1: do not wait
	spinning bool
	sleeping bool      // the waiter's ring sockets count it among their sleepers (sleep)
	call     wait.Call // the signal handlers that end the call (wait.Loop)
}

// init prepares a waiter the caller declared (a value on its stack: a waiter made per call on
// the heap was most of the garbage an event loop made); EINVAL for a bad timeout.
func (w *waiter) init(e *Mux, ts *unix.Timespec, sig uintptr) syscall.Errno {
	*w = waiter{e: e}
	var counters *transport.SigCounters
	if c := umem.SigCounters(sig); c != nil {
		counters = sigCounters(c)
	}
	w.call.StartWith(0, counters) // the deadline is the waiter's own (-1: do not wait)
	if ts != nil {
		if ts.Sec < 0 || ts.Nsec < 0 || ts.Nsec >= 1e9 {
			return unix.EINVAL
		}
		d := ts.Sec*1e9 + ts.Nsec
		if d == 0 {
			w.deadline = -1
		} else {
			w.deadline = sysc.Nanotime() + d
		}
	}
	return 0
}

// policy is the waiter's spinning for wait.Loop: SelectPoll microseconds from the call's start
// (< 0: until the deadline), never past the deadline, none with a zero timeout; any signal
// handler ends the call.
func (w *waiter) policy() wait.Policy {
	p := wait.Policy{Timed: true, Budget: int64(w.e.p.SelectPoll) * 1000, AnySignal: true}
	if w.e.p.SelectPoll < 0 {
		p.Budget = -1
	}
	switch {
	case w.deadline > 0:
		p.Until = w.deadline
	case w.deadline < 0:
		p.Budget = 0 // a zero timeout: looks, never spins
	}
	return p
}

// interrupted reports whether a signal handler ran on this thread since the call began: select,
// poll and epoll_wait then end with EINTR.
func (w *waiter) interrupted() bool { return w.call.Interrupted() }

// arm is the timeout to give the waiter's next sleep in the kernel for ts (wait.Call.Arm): a
// sleep that returns nothing early looks whether a signal ended it (interrupted).
func (w *waiter) arm(ts *unix.Timespec) *unix.Timespec { return w.call.Arm(ts) }

// spin marks the waiter's sockets as polled (senders skip wake datagrams) or not.
func (w *waiter) spin(on bool) {
	if w.spinning == on {
		return
	}
	w.spinning = on
	for _, u := range w.socks {
		u.Spin(on)
	}
	// A TCP connection's writer skips its wake byte while a reader holds a mark on it.
	if on && !w.setMarks {
		for _, t := range w.tcps {
			if m := t.Mark(); m != nil {
				w.spun = append(w.spun, m)
			}
		}
		return
	}
	for _, m := range w.spun {
		m.SpinEnd()
	}
	w.spun = w.spun[:0]
}

// sleep marks the waiter asleep in the kernel on its ring sockets (on, before its last look at
// the rings) or awake again: a thread of ours that stops spinning on one of them with datagrams
// queued then rings its doorbell, since senders skipped the wake-up for the spinner.
func (w *waiter) sleep(on bool) {
	if w.sleeping == on {
		return
	}
	w.sleeping = on
	for _, u := range w.socks {
		u.Sleep(on)
	}
	for _, t := range w.tcps {
		t.Sleep(on)
	}
}

// remaining is the sleep timeout: nil for forever, zero when the deadline passed.
func (w *waiter) remaining() *unix.Timespec {
	if w.deadline == 0 {
		return nil
	}
	left := w.deadline - sysc.Nanotime()
	if w.deadline < 0 || left < 0 {
		left = 0
	}
	ts := unix.NsecToTimespec(left)
	return &ts
}

// osCheckDue reports whether the look l looks at the kernel fds: the first, every
// SelectPollOSRatio-th, and every one while the spin yields at each poll on a shared CPU.
func (w *waiter) osCheckDue(l wait.Look) bool {
	r := w.e.p.SelectPollOSRatio
	return l.Round == 0 || l.Shared || (r > 0 && l.Round%r == 0)
}

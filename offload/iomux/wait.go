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
	spinner  wait.Spin // the polling, with the engine's one yield policy
	call     wait.Call // the signal handlers that end the call
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

// begin starts the waiter's polling (the SelectPoll budget counts from here).
func (w *waiter) begin() { w.spinner.Begin(sysc.Nanotime()) }

// spinBudget reports whether the waiter may still poll instead of sleeping; it counts the poll
// (wait.Spin: the yield policy).
func (w *waiter) spinBudget() bool {
	p := w.e.p.SelectPoll
	now := sysc.Nanotime()
	w.spinner.Poll(now)
	if p < 0 {
		return w.deadline == 0 || now < w.deadline
	}
	return w.spinner.Elapsed(now) < int64(p)*1000 && (w.deadline == 0 || now < w.deadline)
}

// next decides what a waiter does after a look that found nothing: end with EINTR (a signal
// handler ran), spin on within the budget (again), or, once the budget is spent, give its spin
// marks back and look once more (again); false and 0: go on towards the sleep.
func (w *waiter) next() (errno syscall.Errno, again bool) {
	if w.interrupted() {
		return unix.EINTR, false
	}
	if w.spinBudget() {
		w.spin(true)
		return 0, true
	}
	if w.spinning {
		w.spin(false)
		return 0, true // one more look at the rings and the kernel before sleeping
	}
	return 0, false
}

// interrupted reports whether a signal handler ran on this thread since the call began: select,
// poll and epoll_wait then end with EINTR.
func (w *waiter) interrupted() bool { return w.call.Interrupted() }

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

// osCheckDue reports whether poll iteration i looks at the kernel fds.
func (w *waiter) osCheckDue(i int) bool {
	r := w.e.p.SelectPollOSRatio
	return i == 0 || (r > 0 && i%r == 0)
}

package udpcall

import (
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

var epoch = time.Now()

// Nanotime is the monotonic clock (nanoseconds) Wait's deadlines are on; the transports use it
// too (the vDSO clock only: no timers).
func Nanotime() int64 { return int64(time.Since(epoch)) }

// Wait is what a blocking receive watches besides the data: the socket's receive timeout and the
// thread's signal handlers. The zero value is not started.
type Wait struct {
	Started  bool
	Begin    int64 // Nanotime when the wait started
	Deadline int64 // Nanotime; 0: no SO_RCVTIMEO
	sig      *transport.SigCounters
	all      uint32
	intr     uint32
}

// Start begins the wait: timeout is SO_RCVTIMEO in nanoseconds (0: none), signals returns the
// calling thread's handler counters (nil: none).
func (w *Wait) Start(timeout int64, signals func() *transport.SigCounters) {
	w.Started = true
	w.Begin = Nanotime()
	if timeout > 0 {
		w.Deadline = w.Begin + timeout
	}
	if signals != nil {
		w.sig = signals()
		w.all, w.intr = atomic.LoadUint32(&w.sig.All), atomic.LoadUint32(&w.sig.Interrupting)
	}
}

// Check returns EINTR when a handler ended the wait (one without SA_RESTART, or any with a
// receive timeout, as the kernel's blocking receive), EAGAIN when the timeout expired.
func (w *Wait) Check() syscall.Errno {
	if w.sig != nil {
		if atomic.LoadUint32(&w.sig.Interrupting) != w.intr {
			return unix.EINTR
		}
		if w.Deadline != 0 && atomic.LoadUint32(&w.sig.All) != w.all {
			return unix.EINTR // with a receive timeout, even SA_RESTART does not restart
		}
	}
	if w.Deadline != 0 && Nanotime() >= w.Deadline {
		return unix.EAGAIN
	}
	return 0
}

// Remaining is the sleep's timeout: nil without SO_RCVTIMEO.
func (w *Wait) Remaining() *unix.Timespec {
	if w.Deadline == 0 {
		return nil
	}
	ts := unix.NsecToTimespec(max(w.Deadline-Nanotime(), 0))
	return &ts
}

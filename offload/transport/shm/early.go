package shm

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport/udpcall"
)

// earlyTick is how often a receive that waits for its socket's inbox looks again.
const earlyTick = 2e6 // ns

// WaitEarly is the first part of a blocking receive on a UDP socket that has no inbox yet (its
// rule is not decided, or it has no port): the kernel would block until a datagram arrives, but
// ring datagrams reach the socket only once it has an inbox, which another thread's bind,
// connect or first send makes. So the wait sleeps on the kernel socket and looks at ready (the
// socket has its inbox, or will never get one) every 2 ms. It returns readable when the kernel
// socket has something to read or ready said so, or the error the receive ends with: EAGAIN when
// SO_RCVTIMEO expired, EINTR when a signal handler ran (as a blocking receive would, SA_RESTART
// honoured like the ring path).
func (e *Env) WaitEarly(fd int, ready func() bool) (readable bool, errno syscall.Errno) {
	var timeo int64
	if tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO); err == nil {
		timeo = tv.Nano()
	}
	var w udpcall.Wait
	w.Start(timeo, e.p.Signals)
	for {
		if ready() {
			return true, 0
		}
		if errno := w.Check(); errno != 0 {
			return false, errno
		}
		ts := unix.NsecToTimespec(earlyTick)
		if w.Deadline != 0 {
			ts = unix.NsecToTimespec(min(earlyTick, max(w.Deadline-nanotime(), 0)))
		}
		r0, _, errno := ppoll2(fd, -1, &ts)
		switch {
		case errno == unix.EINTR:
			continue // w.check decides
		case errno != 0:
			return true, 0 // the receive itself reports it
		case r0 != 0:
			return true, 0
		}
	}
}

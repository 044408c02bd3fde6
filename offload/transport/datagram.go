package transport

import "golang.org/x/sys/unix"

// DatagramQueue is a datagram transport that keeps its own receive queue beside the kernel
// socket's (shared-memory rings, AF_XDP frames). Such transports answer several hooks of the
// contract alike; the Datagram functions are those answers, written once.
type DatagramQueue interface {
	// ShutWrite notes a shutdown for sending: sends then fail with EPIPE.
	ShutWrite()
	// NextSize is the size of the next queued datagram; false when none is queued.
	NextSize() (int, bool)
	// RingReady reports whether a datagram is queued.
	RingReady() bool
	// GaveUp is why the socket went back to the kernel (ReasonNone: it did not).
	GaveUp() Reason
	// HandOver takes the queued datagrams (name and payload) out and sends the socket back
	// to the kernel.
	HandOver() [][2][]byte
}

// DatagramShutdown is Hooks.Shutdown: SHUT_WR and SHUT_RDWR stop the sending (ShutWrite); an
// invalid how changes nothing (the kernel fails the call).
func DatagramShutdown(q DatagramQueue, how int) {
	if how == unix.SHUT_WR || how == unix.SHUT_RDWR {
		q.ShutWrite()
	}
}

// DatagramIoctl is Hooks.Ioctl: FIONREAD (SIOCINQ) is the size of the next queued datagram, as
// the kernel answers it for a UDP socket; other requests are the kernel's.
func DatagramIoctl(q DatagramQueue, req uint32) (int, bool) {
	if req != unix.SIOCINQ {
		return 0, false
	}
	return q.NextSize()
}

// DatagramFork is Hooks.Fork: the queued datagrams are handed over and the socket goes back to
// the kernel, unless it went already.
func DatagramFork(q DatagramQueue) ([][2][]byte, bool) {
	if q.GaveUp() != ReasonNone {
		return nil, false
	}
	return q.HandOver(), true
}

// DatagramPoll is Ready.Poll: POLLIN added to the kernel's answer when a datagram is queued.
func DatagramPoll(q DatagramQueue, events, kernel int16) (int16, bool) {
	if events&unix.POLLIN != 0 && q.RingReady() {
		return kernel | unix.POLLIN, true
	}
	return kernel, true
}

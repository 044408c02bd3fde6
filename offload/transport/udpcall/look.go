package udpcall

import (
	"syscall"

	"github.com/goxio/goxio/offload/internal/wait"
)

// KernelLook is the kernel socket's part of a user-space UDP receive's look (the Try of its
// wait.Loop), the same for every transport that serves datagrams beside the kernel socket.
type KernelLook struct {
	// Now makes the call on the kernel socket without blocking: done false when nothing was
	// there. (Closures over the call: a call pointer handed to a function value would move
	// the program's call to the heap.)
	Now func() (n int, errno syscall.Errno, done bool)
	// Shut reports whether the socket was shut down for reading.
	Shut func() bool
	// Ratio looks at the kernel every Ratio spin polls (VMA_RX_UDP_POLL_OS_RATIO; 0: never
	// while spinning).
	Ratio int
}

// Look makes the kernel socket's part of the look l when it is due: when *check is set (a
// non-blocking call looks every time, a blocking one after the kernel woke its sleep; Look
// clears it), at every Ratio-th spin poll (l.Polls) or every one on a shared CPU (l.Shared: each
// poll is a yield then), and at the call's last look (l.Last: a
// datagram already in the kernel's queue wins over a signal or the timeout). done ends the call with n and errno:
// a kernel datagram (got true) or error, or, for a blocking call, 0 after shutdown(SHUT_RD)
// once the queue is empty, as the kernel's blocking receive (a non-blocking one says EAGAIN).
func (k *KernelLook) Look(check *bool, l wait.Look, nonblock bool) (n int, errno syscall.Errno, got, done bool) {
	if !*check && !l.Last && !l.Shared && (k.Ratio <= 0 || l.Polls == 0 || l.Polls%k.Ratio != 0) {
		return 0, 0, false, false
	}
	*check = false
	if n, errno, done := k.Now(); done {
		return n, errno, errno == 0, true
	}
	if !nonblock && k.Shut() {
		return 0, 0, false, true
	}
	return 0, 0, false, false
}

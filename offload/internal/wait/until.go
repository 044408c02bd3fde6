package wait

import (
	"syscall"

	"github.com/goxio/goxio/offload/internal/sysc"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// untilTick is how often Until looks at its condition again.
const untilTick = 2e6 // ns

// Until is a blocking receive's wait for something no fd announces, besides its kernel socket:
// the engine uses it for a receive on a UDP socket whose rings are not there yet (its rule is
// not decided, or it has no port): the kernel would block until a datagram arrives, but ring
// datagrams reach the socket only once it has its rings, which another thread's bind, connect or
// first send makes. So the wait sleeps on the kernel socket fd and looks at ready (the socket
// has its rings, or will never get them) every 2 ms. It returns readable when the kernel socket
// has something to read or ready said so, or the error the receive ends with: EAGAIN when
// SO_RCVTIMEO expired, EINTR when a signal handler ran (as a blocking receive would, SA_RESTART
// honoured like the ring path). signals returns the calling thread's signal-handler counters
// (nil: none).
func Until(fd int, signals func() *transport.SigCounters, ready func() bool) (readable bool, errno syscall.Errno) {
	var timeo int64
	if ns, err := sysc.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO); err == nil {
		timeo = ns
	}
	var w Call
	n, errno := Loop(&w, Policy{Timeout: timeo, Signals: signals}, Steps{
		Try: func(Look) (int, syscall.Errno, bool) {
			return 1, 0, ready()
		},
		Sleep: func() (int, syscall.Errno, bool) {
			fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
			_, errno := sysc.PpollFds(fds[:], w.Timeout(untilTick), 0)
			switch {
			case errno == unix.EINTR:
				return 0, 0, false // the signal counters decide
			case errno != 0:
				return 1, 0, true // the receive itself reports it
			case fds[0].Revents != 0:
				return 1, 0, true
			}
			return 0, 0, false
		},
	})
	return n > 0, errno
}

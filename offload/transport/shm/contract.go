package shm

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// The transport contract (transport.Endpoint) for the methods udp.go, ready.go, multicast.go
// and handover.go do not already name.

var (
	_ transport.Endpoint      = (*UDP)(nil)
	_ transport.DatagramQueue = (*UDP)(nil)
)

// BeforeData does nothing: it is called for stream sockets only.
func (u *UDP) BeforeData(int) {}

// Shutdown notes a shutdown for sending (SHUT_WR, SHUT_RDWR): ring sends then fail with EPIPE as
// the kernel's do. An invalid how changes nothing (the kernel fails the call).
func (u *UDP) Shutdown(_, how int) { transport.DatagramShutdown(u, how) }

// Ioctl answers FIONREAD with the size of the next ring datagram (NextSize).
func (u *UDP) Ioctl(_ int, req uint32) (int, bool) { return transport.DatagramIoctl(u, req) }

// Queues knows none (the statistics count ring datagrams themselves).
func (u *UDP) Queues() (rx, tx int, ok bool) { return 0, 0, false }

// Fork hands the ring datagrams over (HandOver) and has the socket go back to the kernel, unless
// it went already.
func (u *UDP) Fork(int) ([][2][]byte, bool) {
	u.own.Drop(false, u.env.closeFD) // the child must not inherit it (udpcall.OwnRef)
	return transport.DatagramFork(u)
}

// Finish closes the socket (Close).
func (u *UDP) Finish(int) { u.Close() }

// Starting reports whether the socket has no port yet and did not give up: a blocking receive
// then waits for the inbox too (it comes with the port). A socket that got its port from a send
// and opens its inbox later (lazy.go) is not starting: its receives read the kernel socket until
// then, and the inbox is published only while none does.
func (u *UDP) Starting() bool {
	return u.Inbox() == nil && !u.lazy.Load() && u.GaveUp() == transport.ReasonNone
}

// pollRdNorm is POLLRDNORM (asm-generic/poll.h), which golang.org/x/sys/unix does not define.
const pollRdNorm = 0x40

// Poll adds POLLIN to the kernel's answer when the rings hold a datagram (RingReady). When the
// kernel reported the socket fd readable and all it holds are loopback copies of multicast
// datagrams the rings brought (firstNotCopy drops them, as a receive would), POLLIN is the
// rings' answer alone: the kernel would not have reported it either.
func (u *UDP) Poll(fd int, events, kernel int16) (int16, bool) {
	if fd >= 0 && kernel&unix.POLLIN != 0 && u.joinSnap.Load() != nil && u.enter() {
		u.rxmu.Lock()
		copies := !u.firstNotCopy(fd)
		u.rxmu.Unlock()
		u.exit()
		if copies {
			kernel &^= unix.POLLIN | pollRdNorm
		}
	}
	return transport.DatagramPoll(u, events, kernel)
}

// KernelEvents are the events asked for: the kernel socket's readiness is its own.
func (u *UDP) KernelEvents(events int16) int16 { return events }

// Ended is false: a datagram socket has no end of input.
func (u *UDP) Ended() bool { return false }

// Mark takes none: pollers mark the inbox with Spin.
func (u *UDP) Mark() transport.Mark { return nil }

// Marked is false (marks of others do not keep wake-ups from a datagram socket's sleepers:
// wakeSleepers rings for them).
func (u *UDP) Marked() bool { return false }

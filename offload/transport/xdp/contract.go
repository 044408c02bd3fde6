package xdp

import (
	"github.com/goxio/goxio/offload/transport"
)

// The transport contract (transport.Endpoint) for the methods udp.go, ready.go and handover.go
// do not already name.

var (
	_ transport.Endpoint      = (*UDP)(nil)
	_ transport.DatagramQueue = (*UDP)(nil)
)

// BeforeData does nothing: it is called for stream sockets only.
func (u *UDP) BeforeData(int) {}

// OptionValue leaves the kernel's value: the transport sets no option for itself.
func (u *UDP) OptionValue(int, int, []byte) {}

// Shutdown notes a shutdown for sending (SHUT_WR, SHUT_RDWR). An invalid how changes nothing.
func (u *UDP) Shutdown(_, how int) { transport.DatagramShutdown(u, how) }

// Ioctl answers FIONREAD with the size of the next queued datagram (NextSize).
func (u *UDP) Ioctl(_ int, req uint32) (int, bool) { return transport.DatagramIoctl(u, req) }

// Queues knows none.
func (u *UDP) Queues() (rx, tx int, ok bool) { return 0, 0, false }

// RestoreOptions does nothing: the transport sets no option for itself.
func (u *UDP) RestoreOptions(int) {}

// Fork hands the queued datagrams over (HandOver) and has the socket go back to the kernel,
// unless it went already.
func (u *UDP) Fork(int) ([][2][]byte, bool) {
	u.own.Drop(false, u.env.closeFD) // the child must not inherit it (udpcall.OwnRef)
	return transport.DatagramFork(u)
}

// Finish closes the socket (Close).
func (u *UDP) Finish(int) { u.Close() }

// Starting is false: the socket reads both paths from its creation.
func (u *UDP) Starting() bool { return false }

// Poll adds POLLIN to the kernel's answer when a datagram is queued (RingReady).
func (u *UDP) Poll(_ int, events, kernel int16) (int16, bool) {
	return transport.DatagramPoll(u, events, kernel)
}

// KernelEvents are the events asked for.
func (u *UDP) KernelEvents(events int16) int16 { return events }

// Ended is false: a datagram socket has no end of input.
func (u *UDP) Ended() bool { return false }

// Mark takes none: pollers mark the queue with Spin.
func (u *UDP) Mark() transport.Mark { return nil }

// Marked is false.
func (u *UDP) Marked() bool { return false }

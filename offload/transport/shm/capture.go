package shm

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
)

// Taps for goxio capture (offload/capture). The send and receive paths call them behind
// capture.On(), one relaxed load while no capture is attached.

// tapRx taps a ring datagram the socket received: name is the record's sender address (and,
// for a group's datagram, the group); sender is the sending process.
func (u *UDP) tapRx(name, data []byte, sender int) {
	src := sockaddr4(name)
	dst := u.localAddr()
	if len(name) == mcNameLen {
		dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(name[unix.SizeofSockaddrInet4:])), dst.Port())
	} else if dst.Addr().IsUnspecified() {
		// A wildcard binding: on this host, a sender's source address is the destination it
		// reached (the local route chooses the destination itself as the source).
		dst = netip.AddrPortFrom(src.Addr(), dst.Port())
	}
	capture.UDP(capture.ShmUDP, capture.In, int(u.capFD.Load()), sender, src, dst, [][]byte{data}, len(data))
}

// tapMulticast taps a datagram to a group that went to the group's goxio members through rings
// (once, as the wire carries it once).
func (u *UDP) tapMulticast(fd int, group netip.AddrPort, bufs [][]byte, total int) {
	src := u.localAddr()
	if src.Addr().IsUnspecified() {
		src = netip.AddrPortFrom(u.env.source(group.Addr()), src.Port())
	}
	capture.UDP(capture.ShmUDP, capture.Out, fd, 0, src, group, bufs, total)
}

package shm

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/udpcall"
)

// Taps for goxio capture (offload/capture). The send and receive paths call them behind
// capture.On(), one relaxed load while no capture is attached.

// tapRx taps a ring datagram the socket received: name is the record's sender address (and,
// for a group's datagram, the group); sender is the sending process.
func (u *UDP) tapRx(name, data []byte, sender int) {
	var sab [unix.SizeofSockaddrInet6]byte
	sa, _, group, mc := mcRecord(name, &sab)
	src := sysc.ParseSockaddr(sa)
	dst := u.localAddr()
	if mc {
		if src.Addr().Is4In6() {
			group = netip.AddrFrom16(group.As16()) // as the member's family has it
		}
		dst = netip.AddrPortFrom(group, dst.Port())
	} else if dst.Addr().IsUnspecified() {
		// A wildcard binding: on this host, a sender's source address is the destination it
		// reached (the local route chooses the destination itself as the source).
		dst = netip.AddrPortFrom(src.Addr(), dst.Port())
	}
	capture.UDP(capture.ShmUDP, capture.In, int(u.capFD.Load()), sender, src, dst, [][]byte{data}, len(data))
}

// tapMulticast taps a datagram sent to a group (through the kernel first): once, as the wire
// carries it once, as a ring datagram when it went to goxio members through rings, else as the
// kernel's (with --dump-os).
func (u *UDP) tapMulticast(fd int, group netip.AddrPort, bufs [][]byte, total int, rings bool) {
	via := uint8(capture.ShmUDP)
	if !rings {
		if !capture.DumpOS() {
			return
		}
		via = capture.Kernel
	}
	src := u.localAddr()
	if src.Addr().IsUnspecified() {
		src = netip.AddrPortFrom(u.env.source(group.Addr()), src.Port())
	}
	capture.UDP(via, capture.Out, fd, 0, src, group, bufs, total)
}

// tapOS taps a data call the kernel carried for the socket, n its result (--dump-os): a
// unicast send (a multicast one is tapMulticast's) or a receive. A receive without an address
// buffer on an unconnected socket names the source 0.0.0.0:0 (the program did not ask for it).
func (u *UDP) tapOS(c *transport.Call, n int) {
	if n < 0 || c.Op == transport.OpSendmmsg || c.Op == transport.OpRecvmmsg || !capture.DumpOS() {
		return
	}
	umem.Protect()
	defer func() { umem.Fault(recover()) }()
	var arr [udpcall.MaxBufs][]byte
	local := u.localAddr()
	if !c.Op.Receive() {
		tx, ok := udpcall.ParseTx(c, arr[:0])
		if !ok {
			return
		}
		dst, ok := tx.Dest(u.Peer)
		if !ok || dst.Addr().IsMulticast() {
			return
		}
		if local.Addr().IsUnspecified() {
			local = netip.AddrPortFrom(u.env.source(dst.Addr()), local.Port())
		}
		capture.UDP(capture.Kernel, capture.Out, c.FD, 0, local, dst, tx.Bufs, min(n, tx.Total))
		return
	}
	rc, ok := udpcall.ParseRx(c, arr[:0])
	if !ok || rc.Bad || rc.Flags&unix.MSG_PEEK != 0 {
		return
	}
	src := u.Peer()
	if rc.NamePtr != 0 && rc.NameLen != nil && *rc.NameLen >= unix.SizeofSockaddrInet4 {
		src = sysc.ParseSockaddr(umem.Bytes(rc.NamePtr, int(min(*rc.NameLen, unix.SizeofSockaddrInet6))))
	}
	if !src.IsValid() {
		src = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
		if !local.Addr().Unmap().Is4() {
			src = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
		}
	}
	room := 0
	for _, b := range rc.Bufs {
		room += len(b)
	}
	capture.UDP(capture.Kernel, capture.In, c.FD, 0, src, local, rc.Bufs, min(n, room))
}

package xdp

// The outbound flow of one datagram, stage by stage:
//
//  1. send parses the call (buffers from program memory, destination, flags); anything the ring
//     cannot carry (control messages, unusual flags, a payload too large for any IPv4 packet)
//     goes to the kernel. wireAddrs gives the datagram its family on the wire (a dual-stack
//     socket's v4-mapped destination is IPv4) or sends it to the kernel (what the kernel refuses,
//     a link-local destination without a scope id, program-given flow labels). sendmmsg sends each message so, then kicks once.
//  2. ensureBound gives an unbound socket its port, as the kernel does at a first send, so the
//     frame carries the port replies come back to (and those replies are steered).
//  3. routeTo finds the route: through the kernel (with the reason, counted per reason) or a
//     TX ring with the Ethernet and IPv4 addresses.
//  4. transmit takes a TX frame (waiting briefly for completions when none is free), builds
//     the headers (IPv4, or IPv6 with the kernel's hop limit, traffic class and flow label:
//     ipv6opts.go) and the payload into it and posts it on the TX ring; it kicks the ring (the
//     system call that makes the kernel send in copy mode) now, or a stream of sends shares
//     one kick (kick.go).

import (
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/udpcall"
	"github.com/goxio/goxio/offload/xdp/packet"
)

// sendFlags are the send flags the ring honours; any other flag sends through the kernel.
const sendFlags = unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL | unix.MSG_CONFIRM

// txWait bounds how long a send waits for a free TX frame before it drops its datagram.
const txWait = 200e3 // ns

// send performs a send call.
func (u *UDP) send(c *transport.Call) (n int, errno syscall.Errno, viaOS bool) {
	if u.kernelOnly.Load() || u.wrShut.Load() {
		return u.kernelSend(c, WhyUnsupported)
	}
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			n, errno, viaOS = -1, unix.EFAULT, false
		}
	}()
	if c.Op == transport.OpSendmmsg {
		return u.sendmmsg(c)
	}
	return u.sendOne(c, false)
}

// maxMmsg is the kernel's limit on sendmmsg's vlen (UIO_MAXIOV).
const maxMmsg = 1024

// sendmmsg sends each message as sendmsg would (through the ring or the kernel) and kicks the
// TX rings once at the end: the frames of the whole batch share the kicks. As the kernel's, it
// returns how many messages went, or the first message's error when none did, and sets each
// sent message's msg_len.
func (u *UDP) sendmmsg(c *transport.Call) (int, syscall.Errno, bool) {
	vlen := int(uint32(c.A[1]))
	if vlen <= 0 || vlen > maxMmsg {
		return u.kernelSend(c, WhyUnsupported)
	}
	defer u.env.Flush()
	sent, viaOS := 0, false
	for i := range vlen {
		mp, lenp := umem.Mmsghdr(c.A[0], i)
		one := transport.Call{Op: transport.OpSendmsg, FD: c.FD, A: [5]uintptr{mp, c.A[2]}}
		n, errno, os := u.sendOne(&one, true)
		if errno != 0 {
			if sent == 0 {
				return -1, errno, os
			}
			break
		}
		*lenp = uint32(n)
		sent++
		viaOS = viaOS || os
	}
	return sent, 0, viaOS
}

// sendOne sends one datagram (write, writev, sendto, sendmsg); batch: it is part of a sendmmsg
// batch, whose caller kicks the TX rings at its end.
func (u *UDP) sendOne(c *transport.Call, batch bool) (n int, errno syscall.Errno, viaOS bool) {
	var arr [udpcall.MaxBufs][]byte
	tx, ok := udpcall.ParseTx(c, arr[:0])
	if !ok {
		return u.kernelSend(c, WhyUnsupported)
	}
	bufs, total, flags := tx.Bufs, tx.Total, tx.Flags
	if tx.Ctl() || flags&^sendFlags != 0 || total < 0 || total > packet.MaxPayload {
		return u.kernelSend(c, WhyUnsupported)
	}
	dst, ok := tx.Dest(u.peerAddr)
	if !ok {
		return u.kernelSend(c, WhyUnsupported) // EINVAL, ENOTCONN or EDESTADDRREQ from the kernel
	}
	if dst.Port() == 0 || dst.Addr().Unmap().IsUnspecified() {
		return u.kernelSend(c, WhyUnsupported)
	}
	local, ok := u.ensureBound(c.FD)
	if !ok {
		return u.kernelSend(c, WhyUnsupported)
	}
	// The datagram's family and addresses as they go on the wire (wireAddrs).
	scope := u.peerScope.Load()
	if tx.Named() {
		scope = tx.ScopeID()
	}
	wdst, wlocal, why := u.wireAddrs(dst, local, scope)
	if why != whyNone {
		return u.kernelSend(c, why)
	}
	oif := linkScope(wdst.Addr(), scope)
	if oif == 0 && wdst.Addr().Is6() {
		oif = int(u.ucastIf.Load()) // as udpv6_sendmsg: the socket's unicast interface, without a scope
	}
	r := u.routeTo(wdst.Addr(), wlocal, oif)
	if r.kernel {
		return u.kernelSend(c, r.why)
	}
	ipHdr, hops := packet.IPv4HeaderLen, 0
	if r.hdr.IPv6 {
		ipHdr = packet.IPv6HeaderLen
		var ok bool
		if hops, ok = u.hopLimitOf(r); !ok {
			return u.kernelSend(c, WhyHopLimit)
		}
	}
	if total+ipHdr+packet.UDPHeaderLen > r.mtu {
		return u.kernelSend(c, WhyTooBig)
	}
	nonblock := u.nonblock() || flags&unix.MSG_DONTWAIT != 0
	n, errno, built := u.transmit(r, wlocal, wdst, hops, bufs, total, nonblock, batch)
	if !built {
		return u.kernelSend(c, WhyTooBig)
	}
	return n, errno, false
}

// transmit builds the datagram into a TX frame of r's socket and posts it, kicking the TX ring
// now or leaving the kick to a later call (kick.go; batch: a sendmmsg batch, which kicks at its
// end). hops is an IPv6 datagram's hop limit (hopLimitOf, read once per datagram). built is false
// when Build refused the datagram (the caller sends it through the kernel).
func (u *UDP) transmit(r *route, local, dst netip.AddrPort, hops int, bufs [][]byte, total int, nonblock, batch bool) (n int, errno syscall.Errno, built bool) {
	x := r.x
	x.txmu.Lock()
	held := false
	defer func() {
		if held {
			x.s.Free(x.tx[:]) // Build faulted on the program's memory, or refused
		}
		x.txmu.Unlock()
	}()
	if x.s.Alloc(x.tx[:]) == 0 && !u.waitTx(x, nonblock) {
		if nonblock && u.env.p.TxNonblockedEagains {
			u.txEagain.Add(1)
			return -1, unix.EAGAIN, true
		}
		u.dropTx()
		return total, 0, true // dropped, as by a full NIC queue: the send still succeeds
	}
	held = true
	h := r.hdr
	h.SrcPort, h.DstPort = local.Port(), dst.Port()
	switch {
	case h.IPv6:
		h.TOS = uint8(u.tclass.Load())
		h.TTL = uint8(hops)
		h.FlowLabel = u.flowLabel(netip.AddrFrom16(h.Src6), netip.AddrFrom16(h.Dst6), h.SrcPort, h.DstPort)
	case r.mcast:
		h.TOS = uint8(u.tos.Load())
		h.TTL = uint8(u.mcTTL.Load())
	default:
		h.TOS = uint8(u.tos.Load())
		h.TTL = uint8(u.ttl.Load())
	}
	if !h.IPv6 {
		h.ID = uint16(u.ipID.Add(1))
	}
	k, err := packet.Build(x.tx[0].Data, &h, bufs, total, r.mtu)
	if err != nil {
		return 0, 0, false
	}
	x.tx[0].Data = x.tx[0].Data[:k]
	if capture.On() {
		capture.Frame(capture.XDP, capture.Out, int(u.capFD.Load()), 0, x.tx[0].Data)
	}
	now := nanotime()
	deferKick := batch || u.env.streaming(x, now)
	sent, _ := x.s.Post(x.tx[:])
	if sent == 0 {
		u.dropTx() // the TX ring has room for every TX frame: not expected
		return total, 0, true
	}
	held = false
	u.env.postedLocked(x, now, deferKick)
	x.countTx(k)
	u.xdpTx.Add(1)
	u.xdpTxBytes.Add(uint64(total))
	return total, 0, true
}

// waitTx waits for a free TX frame: completions reaped (and the kernel kicked) until one is
// free or txWait passed; a non-blocking send looks once. x.txmu is held. It spins with the
// engine's one policy (wait.Spin, eager as the AF_XDP receive: the kernel work that frees
// frames may need this CPU).
func (u *UDP) waitTx(x *xsk, nonblock bool) bool {
	start := nanotime()
	var spin wait.Spin
	spin.BeginEager()
	for {
		u.env.kickLocked(x)
		if x.s.Alloc(x.tx[:]) == 1 {
			return true
		}
		if nonblock || nanotime()-start > txWait {
			return false
		}
		if !spin.Poll(0) {
			// A crowded machine: there is no sleep to fall back on (the kernel's work frees
			// the frames), so every try gives the CPU away.
			sysc.Yield()
		}
	}
}

// kernelSend sends through the kernel; a socket the kernel bound at this send gets its flows
// steered, so that replies come through the rings.
func (u *UDP) kernelSend(c *transport.Call, why KernelWhy) (int, syscall.Errno, bool) {
	u.env.Flush() // datagrams this process sent through the rings leave first
	unbound := u.localAddr().Port() == 0
	n, errno := kernelDo(c)
	if errno == 0 {
		u.osTx.Add(1)
		u.osTxWhy[why].Add(1)
		if unbound {
			u.Bound(c.FD)
		}
	}
	return n, errno, true
}

// whyNone: wireAddrs found no reason to send through the kernel.
const whyNone = numWhy

// wireAddrs returns the destination and local address of a datagram as they go on the wire,
// or the reason it goes through the kernel. An AF_INET socket's are IPv4. An AF_INET6 socket
// sends to a v4-mapped destination as IPv4 (its local address unmapped: :: and
// ::ffff:0.0.0.0 are 0.0.0.0), unless IPV6_V6ONLY or an IPv6 local address makes the kernel
// refuse it; to an IPv6 destination as IPv6, unless its local address is v4-mapped (the kernel
// refuses it). A link-local destination without a scope id (scope: the call's sin6_scope_id, or
// the connected peer's; the kernel then uses the bound device or fails the call), and datagrams
// whose flow label the program controls, go to the kernel too.
func (u *UDP) wireAddrs(dst, local netip.AddrPort, scope uint32) (netip.AddrPort, netip.AddrPort, KernelWhy) {
	if !dst.Addr().Is6() {
		return dst, local, whyNone
	}
	la := local.Addr()
	if d := dst.Addr(); d.Is4In6() {
		if u.v6only.Load() || la.Is6() && !la.Is4In6() && !la.IsUnspecified() {
			return dst, local, WhyUnsupported // the kernel's error
		}
		la = la.Unmap()
		if la.Is6() { // ::
			la = netip.IPv4Unspecified()
		}
		return netip.AddrPortFrom(d.Unmap(), dst.Port()), netip.AddrPortFrom(la, local.Port()), whyNone
	}
	if la.Is4() || la.Is4In6() {
		return dst, local, WhyUnsupported // the kernel's error
	}
	if needsScope(dst.Addr()) && scope == 0 {
		return dst, local, WhyLinkLocal
	}
	if u.sndFlow.Load() {
		return dst, local, WhyFlowLabel
	}
	return dst, local, whyNone
}

// linkScope is the output interface a datagram to dst must take: its scope id for an address
// that needs one (link-local), else 0 (any).
func linkScope(dst netip.Addr, scope uint32) int {
	if needsScope(dst) {
		return int(scope)
	}
	return 0
}

// ensureBound returns the socket's local address, binding it first when it has none: the
// kernel binds an unbound socket at its first send, and the frame must carry the port replies
// go to.
func (u *UDP) ensureBound(fd int) (netip.AddrPort, bool) {
	local := u.localAddr()
	if local.Port() != 0 {
		return local, true
	}
	var wildcard unix.Sockaddr = &unix.SockaddrInet4{}
	if u.domain(fd) == unix.AF_INET6 {
		wildcard = &unix.SockaddrInet6{} // [::]:0, as the kernel's autobind of an AF_INET6 socket
	}
	if unix.Bind(fd, wildcard) != nil {
		return local, false
	}
	u.Bound(fd)
	local = u.localAddr()
	return local, local.Port() != 0
}

// domain is the kernel socket's family: the engine's word for it, or the kernel's.
func (u *UDP) domain(fd int) int { return udpcall.Family(u.Domain, fd) }

func (u *UDP) localAddr() netip.AddrPort {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.local
}

func (u *UDP) peerAddr() netip.AddrPort {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.peer
}

// sockaddr4 parses a sockaddr_in; the zero value for anything else.
func sockaddr4(b []byte) netip.AddrPort { return udpcall.Sockaddr4(b) }

// dropTx counts a datagram the send accepted and the full TX ring dropped.
func (u *UDP) dropTx() {
	u.txDrops.Add(1)
	if u.OnTxDrop != nil {
		u.OnTxDrop()
	}
}

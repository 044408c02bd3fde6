package shm

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
	"github.com/goxio/goxio/offload/transport/udpcall"
)

// route is how the socket reaches one destination, valid while the discovery directory's
// generation stays gen.
type route struct {
	dst netip.AddrPort
	gen uint64
	out *outlet // nil: through the kernel
	// name is the source sockaddr as the receiver's family has it (nameLen bytes: a sockaddr_in,
	// or a sockaddr_in6 with an IPv4 source mapped); for a group, the sockaddr_in, then the group
	// and port. src is the source itself.
	name    [unix.SizeofSockaddrInet6]byte
	nameLen int
	src     netip.AddrPort
	bell    *bellAddr  // the receiver's doorbell
	mc      []mcTarget // a group's goxio members

	// A group's datagrams that leave through the loopback interface (mchost.go).
	from     netip.AddrPort   // the source they carry
	group    netip.AddrPort   // the group and port as the kernel sends to them (IPv4 unmapped)
	name6    [mcNameLen6]byte // an AF_INET6 member's record name (name: an AF_INET member's)
	hostOnly bool             // they reach only this namespace's sockets
	host     hostState        // whether every kernel receiver of them is a ring member
	peer     int              // the receiving process (capture records name it)
	// seen is the socket's kernel count + 1 when a datagram through the route was last marked
	// (order.go); 0 for none.
	seen atomic.Uint64
}

// sendFlags are the send flags the rings honour; any other flag sends through the kernel.
const sendFlags = unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL | unix.MSG_CONFIRM

// send performs a send call: through a ring when the destination is a goxio socket of this
// user and namespace, through the kernel otherwise.
func (u *UDP) send(c *transport.Call) (n int, errno syscall.Errno, viaOS bool) {
	if u.kernelOnly.Load() || u.wrShut.Load() {
		return u.kernel(c)
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
	var arr [udpcall.MaxBufs][]byte
	tx, ok := udpcall.ParseTx(c, arr[:0])
	if !ok {
		return u.kernel(c)
	}
	bufs, total, flags, ctl := tx.Bufs, tx.Total, tx.Flags, tx.Ctl()
	dst, ok := tx.Dest(u.Peer)
	if !ok {
		return u.kernel(c) // EINVAL, another family, no destination: the kernel's answer
	}
	if dst.Addr().IsMulticast() {
		if total < 0 || total > mcMaxPayload(dst) {
			return u.kernel(c)
		}
		n, errno, os := u.sendMulticast(c, dst, bufs, total, !ctl && flags&^sendFlags == 0)
		return n, syscall.Errno(errno), os
	}
	if ctl && !tx.CtlDroppable() || flags&^sendFlags != 0 || total < 0 || total > maxUDPPayload {
		// (TTL, TOS and the like go with the others: the ring receiver never sees them)
		return u.kernel(c)
	}
	r := u.routeTo(c.FD, dst)
	if r == nil || r.out == nil {
		return u.kernelSend(c)
	}
	kseen := u.kernelCount() // before markFor: a kernel send after it changes the count
	seen, mark := u.markFor(r)
	wake, err := r.out.send(r.name[:r.nameLen], bufs, total, mark)
	switch {
	case err == nil:
		if mark {
			u.ordered(r, seen)
		}
		u.ringTx.Add(1)
		if capture.On() {
			capture.UDP(capture.ShmUDP, capture.Out, c.FD, r.peer, r.src, dst, bufs, total)
		} else {
			u.handOver(c, r, kseen)
		}
		if wake {
			ringBell(u.env.ringerFD(), r.bell)
		}
		return total, 0, false
	case errors.Is(err, ring.ErrFull):
		if u.env.p.TxNonblockedEagains && (u.nonblock() || flags&unix.MSG_DONTWAIT != 0) {
			return -1, unix.EAGAIN, false
		}
		u.dropped()
		if capture.On() {
			capture.UDP(capture.ShmUDP, capture.Out, c.FD, r.peer, r.src, dst, bufs, total)
		}
		return total, 0, false // dropped, as by a full kernel receive buffer
	case errors.Is(err, ring.ErrClosed):
		u.route.Store(nil)
	}
	return u.kernelSend(c)
}

// kernelSend sends through the kernel; a socket the kernel bound at this send takes its port and
// opens its inbox at a later call (boundBySend), so goxio peers can answer through a ring.
func (u *UDP) kernelSend(c *transport.Call) (int, syscall.Errno, bool) {
	unbound := u.localAddr().Port() == 0
	n, errno, os := u.kernel(c)
	if errno == 0 {
		wait.Handoff()
		if unbound {
			u.boundBySend(c.FD)
		}
	}
	return n, errno, os
}

// kernel performs the call on the kernel socket.
func (u *UDP) kernel(c *transport.Call) (int, syscall.Errno, bool) {
	n, errno := kernel.Do(c)
	return n, errno, true
}

// routeTo returns how to reach dst, from the cache while the directory has not changed.
func (u *UDP) routeTo(fd int, dst netip.AddrPort) *route {
	gen := u.env.dir.Gen()
	if r := u.route.Load(); r != nil && r.dst == dst && r.gen == gen && (r.out == nil || !r.out.Closed()) {
		return r
	}
	r := &route{dst: dst, gen: gen}
	if dst.Port() == 0 {
		u.route.Store(r)
		return r
	}
	if u.env.dir.UDPPortFree(dst.Port()) {
		// No goxio socket has the port: the kernel delivers, as Lookup would find (its scan
		// skipped: a server that answers a new client each time paid it per datagram). The
		// kernel binds an unbound socket at the send (kernelSend).
		to := netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
		if u.env.p.KernelRoute != nil && !u.env.dir.Receiver(to) { // a group or broadcast: not cached
			u.env.p.KernelRoute(to, gen)
		}
		u.route.Store(r)
		return r
	}
	local, ok := u.ensureBound(fd)
	if !ok {
		return nil
	}
	// The destination as the kernel routes it (an IPv4-mapped one of a dual-stack socket is
	// IPv4), and the source address the datagram carries.
	to, src, ok := u.wire(local.Addr(), dst.Addr())
	if !ok {
		u.route.Store(r) // the kernel's: it delivers, or fails the call, as it does
		return r
	}
	if src.IsUnspecified() {
		src = u.env.source(to)
	}
	if !src.IsValid() {
		u.route.Store(r)
		return r
	}
	from := netip.AddrPortFrom(src, local.Port())
	dst = netip.AddrPortFrom(to, dst.Port())
	var buf [4]discoveryEntry
	found := u.env.dir.Lookup(dst, from, buf[:0])
	if len(found) == 0 && u.env.p.KernelRoute != nil && !u.env.dir.Receiver(dst) {
		u.env.p.KernelRoute(dst, gen)
	}
	if len(found) == 1 && !found[0].ReusePort {
		r.out = u.env.outlet(found[0].Inbox)
		r.bell = newBellAddr(found[0].Inbox)
		r.peer = found[0].PID
		r.nameLen = sysc.PutSockaddr(r.name[:], found[0].Family, from)
	}
	if ce := u.env.log.Check(zap.DebugLevel, "shm route"); ce != nil {
		ce.Write(zap.Stringer("dst", dst), zap.Stringer("src", from), zap.Int("found", len(found)), zap.Bool("ring", r.out != nil))
	}
	r.src = from
	u.route.Store(r)
	return r
}

// wire is how the kernel sends from a socket bound to local to dst: the destination and source
// addresses of the datagram (src unspecified: the route's source), IPv4 for an IPv4-mapped
// destination of a dual-stack socket. false leaves the send to the kernel: a combination it
// fails (a mapped destination from a v6only socket or one bound to an IPv6 address, an IPv6
// one from a socket bound to a mapped address) or one the rings do not model (link-local and
// other scoped addresses, whose scope id the rings do not carry).
func (u *UDP) wire(local, dst netip.Addr) (to, src netip.Addr, ok bool) {
	u.mu.Lock()
	family, v6only := u.family, u.v6only
	u.mu.Unlock()
	if family != unix.AF_INET6 || dst.Is4() {
		// An AF_INET socket sends to IPv4 addresses only; a sockaddr_in given to an AF_INET6
		// socket is the kernel's to judge.
		return dst, local, family == unix.AF_INET && dst.Is4() && local.Is4()
	}
	if dst.Is4In6() {
		if v6only || !(local.IsUnspecified() || local.Is4In6()) {
			return netip.Addr{}, netip.Addr{}, false
		}
		if local.IsUnspecified() {
			return dst.Unmap(), netip.IPv4Unspecified(), true
		}
		return dst.Unmap(), local.Unmap(), true
	}
	if local.Is4() || local.Is4In6() || dst.IsLinkLocalUnicast() || dst.IsLinkLocalMulticast() || dst.Zone() != "" {
		return netip.Addr{}, netip.Addr{}, false
	}
	return dst, local, true
}

// domain is the kernel socket's family: the engine's word for it, or the kernel's.
func (u *UDP) domain(fd int) int { return udpcall.Family(u.Domain, fd) }

// ensureBound returns the socket's local address, binding it first when it has none: the kernel
// binds an unbound socket at its first send, and the ring datagram must carry the port replies go
// to.
func (u *UDP) ensureBound(fd int) (netip.AddrPort, bool) {
	local := u.localAddr()
	if local.Port() != 0 {
		return local, true
	}
	// The kernel's implicit bind: the wildcard address of the socket's family.
	var any unix.Sockaddr = &unix.SockaddrInet4{}
	if u.domain(fd) == unix.AF_INET6 {
		any = &unix.SockaddrInet6{}
	}
	if unix.Bind(fd, any) != nil {
		return local, false
	}
	u.boundBySend(fd)
	local = u.localAddr()
	return local, local.Port() != 0
}

func (u *UDP) localAddr() netip.AddrPort {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.local
}

// maxUDPPayload is the largest IPv4 UDP payload; larger sends go to the kernel, which fails
// them with EMSGSIZE (or, over IPv6, sends them: 65527 bytes fit there, maxUDP6Payload).
const (
	maxUDPPayload  = 65507
	maxUDP6Payload = 65527
)

// mcMaxPayload is the largest datagram the kernel sends to the group dst (an IPv4-mapped one
// is IPv4); a larger one it fails. A group's datagram the kernel sends gets its ring copies
// too: a member drops the kernel's copy of a ring sender's datagram.
func mcMaxPayload(dst netip.AddrPort) int {
	if dst.Addr().Unmap().Is4() {
		return maxUDPPayload
	}
	return maxUDP6Payload
}

// sockaddr4 parses a sockaddr_in; the zero value for anything else.
func sockaddr4(b []byte) netip.AddrPort { return udpcall.Sockaddr4(b) }

// putSockaddr4 writes a as a sockaddr_in into b (16 bytes).
func putSockaddr4(b []byte, a netip.AddrPort) {
	clear(b[:unix.SizeofSockaddrInet4])
	binary.NativeEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], a.Port())
	ip := a.Addr().As4()
	copy(b[4:8], ip[:])
}

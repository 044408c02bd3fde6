package shm

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/discovery"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/udpcall"
)

// Multicast between goxio sockets of one user and namespace.
//
// A member publishes one discovery entry per join (group, optional source). A sender of a
// datagram to a group sends it through the kernel as the program asked (remote hosts, local
// non-goxio members and goxio sockets that listen through IP_MULTICAST_ALL get it there), and,
// when the kernel accepted it and IP_MULTICAST_LOOP is on, copies it into the ring of every goxio
// member (discovery.LookupMembers). Before its first ring copy the sender flags its binding
// (Entry.MulticastSender); a member then drops the kernel's loopback copy of a datagram whose
// source is a flagged sender and whose destination (IP_PKTINFO, switched on internally while the
// socket has joins; IPV6_RECVPKTINFO on an AF_INET6 socket, which reports IPv4 datagrams'
// destinations mapped) is a group it joined for that source: it has the ring copy. Ring records
// of multicast datagrams carry the destination group and port after the source sockaddr (an
// AF_INET member's: sockaddr_in and the IPv4 group; an AF_INET6 member's: sockaddr_in6 without
// its scope id and the 16-byte group, an IPv4 source and group mapped), and a member that has left the group since
// the sender looked it up drops them. A send that only reaches this namespace's sockets, all of
// them ring members, skips the kernel (mchost.go).
//
// IPv6 groups (IPV6_JOIN_GROUP, MCAST_* at IPPROTO_IPV6) and IPv4 groups joined on a dual-stack
// AF_INET6 socket (IP_ADD_MEMBERSHIP, MCAST_* at IPPROTO_IP) are memberships like IPv4 ones; a
// dual-stack sender's datagram to an IPv4-mapped group is IPv4 (IP_MULTICAST_LOOP and
// IP_MULTICAST_IF apply, as in the kernel), an IPv6 one follows IPV6_MULTICAST_LOOP and
// IPV6_MULTICAST_IF.
//
// Known limits: the interface of a join and IP_MULTICAST_IF are not compared (a ring copy
// reaches a member joined on another interface than the one the datagram leaves through), and a
// membership change races with datagrams in flight as it does in the kernel. An IPv6 group's
// datagram larger than the interface's MTU sent through an interface without carrier reaches the
// members through rings; the kernel loops none of its fragments back.

// join is one membership: a group, for any source or for one.
type join struct {
	group, source netip.Addr
	h             discovery.Handle
	published     bool
}

// joinKey is a join as the receive path checks it.
type joinKey struct{ group, source netip.Addr }

// mcNameLen is the length of a multicast ring record's name for an AF_INET member: the source
// sockaddr_in, then the destination group (4 bytes) and port (2 bytes, network order);
// mcNameLen6 for an AF_INET6 member: the source sockaddr_in6 without its flow label (which a
// receive reports as 0) — family, port, address, scope id (the interface, for a link-local
// source) — then the group (16 bytes): as much as a record carries (ring.MaxName; the port is
// the member's own). Unicast records' names are a bare sockaddr_in or sockaddr_in6, of other
// lengths.
const (
	mcSin6Len  = unix.SizeofSockaddrInet6 - 4
	mcNameLen  = unix.SizeofSockaddrInet4 + 6
	mcNameLen6 = mcSin6Len + 16
)

// putMcSin6 writes from (scope: its scope id) into b as mcRecord reads it: family, port,
// address, scope id.
func putMcSin6(b []byte, from netip.AddrPort, scope uint32) {
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], from.Port())
	a := from.Addr().As16() // an IPv4 source mapped
	copy(b[4:20], a[:])
	binary.NativeEndian.PutUint32(b[20:], scope)
}

// mcRecord splits a ring record's name: for a group's datagram, the source sockaddr the program
// receives (an AF_INET6 member's rebuilt in buf), the source address (unmapped) and the group
// (unmapped); ok is false for a unicast datagram's name.
func mcRecord(name []byte, buf *[unix.SizeofSockaddrInet6]byte) (sa []byte, src, group netip.Addr, ok bool) {
	switch len(name) {
	case mcNameLen:
		sa, group = name[:unix.SizeofSockaddrInet4], netip.AddrFrom4([4]byte(name[unix.SizeofSockaddrInet4:]))
	case mcNameLen6:
		// struct sockaddr_in6 { family; port; flowinfo; addr; scope_id; }
		copy(buf[0:4], name[0:4])
		clear(buf[4:8])
		copy(buf[8:28], name[4:mcSin6Len])
		sa, group = buf[:], netip.AddrFrom16([16]byte(name[mcSin6Len:])).Unmap()
	default:
		return name, netip.Addr{}, netip.Addr{}, false
	}
	return sa, sysc.ParseSockaddr(sa).Addr().Unmap(), group, true
}

// mcTarget is one member a multicast datagram is copied to; v6: an AF_INET6 member (its record
// carries a sockaddr_in6).
type mcTarget struct {
	out  *outlet
	bell *bellAddr
	v6   bool
}

// Join records a membership the kernel socket accepted (IP_ADD_MEMBERSHIP,
// IP_ADD_SOURCE_MEMBERSHIP, MCAST_JOIN_GROUP, MCAST_JOIN_SOURCE_GROUP; source is the zero
// value for any-source joins) and publishes it, so that goxio senders copy the group's
// datagrams into the socket's rings.
func (u *UDP) Join(fd int, group, source netip.Addr) {
	u.mu.Lock()
	defer u.mu.Unlock()
	group, source = group.WithZone("").Unmap(), source.WithZone("").Unmap()
	if u.closed || u.gaveUp != transport.ReasonNone || !group.IsMulticast() {
		return
	}
	for _, j := range u.joins {
		if j.group == group && j.source == source {
			return
		}
	}
	if !u.pktinfoOwn && !u.pktinfoOn.Load() {
		u.pktOpt = pktinfoOption(u.familyLocked(fd))
		if err := unix.SetsockoptInt(fd, u.pktOpt[0], u.pktOpt[1], 1); err != nil {
			u.env.log.Info("shm: cannot tell multicast copies apart, the socket goes back to the kernel", zap.Int("fd", fd), zap.Error(err))
			u.giveUpLocked(transport.ReasonUnsupported)
			return
		}
		u.pktinfoOn.Store(true)
		u.kernelReadOff()
	}
	u.joins = append(u.joins, join{group: group, source: source})
	if u.lazy.Load() {
		u.openLocked(fd) // a member needs its inbox; publishing it publishes the joins
	}
	u.publishJoinsLocked(fd)
	if in := u.inbox.Load(); in != nil {
		u.applyLimit(in)
	}
}

// Leave drops memberships the kernel socket left: the one for source, or every join of the
// group when source is the zero value (IP_DROP_MEMBERSHIP, MCAST_LEAVE_GROUP).
func (u *UDP) Leave(group, source netip.Addr) {
	group, source = group.WithZone("").Unmap(), source.WithZone("").Unmap()
	u.mu.Lock()
	defer u.mu.Unlock()
	kept := u.joins[:0]
	for _, j := range u.joins {
		if j.group == group && (!source.IsValid() || j.source == source) {
			if j.published {
				j.h.Withdraw()
			}
			continue
		}
		kept = append(kept, j)
	}
	clear(u.joins[len(kept):])
	u.joins = kept
	u.snapJoinsLocked()
	if in := u.inbox.Load(); in != nil {
		u.applyLimit(in)
	}
}

// publishJoinsLocked publishes every join not yet published, with the socket's binding; u.mu is
// held.
func (u *UDP) publishJoinsLocked(fd int) {
	defer u.snapJoinsLocked()
	in := u.inbox.Load()
	if in == nil || !u.published {
		return // published by Bound, once the socket has a port
	}
	base := u.entryLocked(fd, in)
	for i := range u.joins {
		j := &u.joins[i]
		e := base
		e.Group, e.Source = j.group, j.source
		if j.published {
			j.h.Update(e)
			continue
		}
		h, err := u.env.dir.Publish(e)
		if err != nil {
			u.env.log.Info("shm: membership not published, members get the group through the kernel", zap.Stringer("group", j.group), zap.Error(err))
			continue
		}
		j.h, j.published = h, true
	}
}

// withdrawJoinsLocked takes every membership out of discovery; u.mu is held.
func (u *UDP) withdrawJoinsLocked() {
	for i := range u.joins {
		if u.joins[i].published {
			u.joins[i].h.Withdraw()
			u.joins[i].published = false
		}
	}
}

// snapJoinsLocked gives the receive path the current joins; u.mu is held.
func (u *UDP) snapJoinsLocked() {
	if len(u.joins) == 0 {
		u.joinSnap.Store(nil)
		return
	}
	s := make([]joinKey, len(u.joins))
	for i, j := range u.joins {
		s[i] = joinKey{j.group, j.source}
	}
	u.joinSnap.Store(&s)
	u.kernelReadOff()
}

// admits reports whether the socket's joins admit a datagram from src to group.
func (u *UDP) admits(group, src netip.Addr) bool {
	p := u.joinSnap.Load()
	if p == nil {
		return false
	}
	for _, j := range *p {
		if j.group == group && (!j.source.IsValid() || j.source == src) {
			return true
		}
	}
	return false
}

// mcRoute returns the members a datagram to the group dst is copied to, looked up again when the
// directory changed; nil when the rings take no copy.
func (u *UDP) mcRoute(fd int, dst netip.AddrPort) *route {
	gen := u.env.dir.Gen()
	if r := u.route.Load(); r != nil && r.dst == dst && r.gen == gen {
		return r
	}
	r := &route{dst: dst, gen: gen}
	defer u.route.Store(r)
	if dst.Port() == 0 {
		return r
	}
	local, ok := u.ensureBound(fd)
	if !ok {
		return nil
	}
	group, ok := u.mcWire(local.Addr(), dst.Addr())
	if !ok {
		return r // the kernel's: it delivers, or fails the call, as it does
	}
	// IP(V6)_MULTICAST_LOOP and IP(V6)_MULTICAST_IF are read from the kernel socket, the one
	// truth: the program may have set them before the socket had this transport (a sender's
	// options come before its first send, which decides its role). The loop is the socket
	// family's option (sk_mc_loop): a dual-stack socket's IPv4 datagrams follow
	// IPV6_MULTICAST_LOOP; their interface is IP_MULTICAST_IF's.
	src := local.Addr().Unmap()
	var scope uint32 // the source's scope id at an AF_INET6 member
	loop := [2]int{unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP}
	if u.domain(fd) == unix.AF_INET6 {
		loop = [2]int{unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_LOOP}
	}
	if !optOn(fd, loop[0], loop[1]) {
		return r
	}
	if group.Is4() {
		if src.IsUnspecified() {
			if a, err := unix.GetsockoptInet4Addr(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF); err == nil && a != [4]byte{} {
				src = netip.AddrFrom4(a)
			} else {
				src = u.env.source(group)
			}
		}
		r.hostOnly = hostOnly(fd)
	} else {
		// The interface: IPV6_MULTICAST_IF, else the device a socket bound to a link-local
		// address is bound to, else the route's.
		ifindex, _ := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF)
		if ifindex == 0 {
			ifindex, _ = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BINDTOIFINDEX)
		}
		rsrc, oif, ok := u.egress6(group, ifindex)
		if !ok || oif == loopbackIndex {
			return r
		}
		if src.IsUnspecified() {
			src = rsrc
		}
		if src.IsLinkLocalUnicast() {
			// The member's receive reports the interface the datagram came in on (looped
			// back on the one it left through) as the source's scope id.
			scope = uint32(oif)
		}
		r.hostOnly = hostOnly6(group)
	}
	if !src.IsValid() {
		return r
	}
	from := netip.AddrPortFrom(src, local.Port())
	to := netip.AddrPortFrom(group, dst.Port())
	var buf [16]discoveryEntry
	members := u.env.dir.LookupMembers(to, from, buf[:0])
	for _, m := range members {
		out := u.env.outletSized(m.Inbox, max(u.env.ringBytes, mcRingBytes))
		if out == nil {
			u.dropped()
			continue
		}
		v6 := m.Family == unix.AF_INET6
		if !v6 && !group.Is4() {
			continue // an AF_INET socket never gets an IPv6 group's datagram (discovery does not return one)
		}
		r.mc = append(r.mc, mcTarget{out: out, bell: newBellAddr(m.Inbox), v6: v6})
	}
	if len(r.mc) > 0 && !u.markSender(fd) {
		r.mc = nil // not flagged: a member would keep the kernel's copy too
	}
	r.from, r.group = from, to
	if group.Is4() {
		putSockaddr4(r.name[:], from)
		ip := group.As4()
		copy(r.name[unix.SizeofSockaddrInet4:], ip[:])
		binary.BigEndian.PutUint16(r.name[unix.SizeofSockaddrInet4+4:], dst.Port())
	}
	putMcSin6(r.name6[:], from, scope)
	g16 := group.As16() // an IPv4 group mapped
	copy(r.name6[mcSin6Len:], g16[:])
	if ce := u.env.log.Check(zap.DebugLevel, "shm multicast route"); ce != nil {
		ce.Write(zap.Stringer("group", to), zap.Stringer("src", from), zap.Int("members", len(r.mc)))
	}
	return r
}

// mcWire is the group a datagram the socket (bound to local) sends to dst goes to, as the kernel
// sends it: IPv4 for an IPv4-mapped group of a dual-stack socket, or a sockaddr_in given to one
// (udpv6_sendmsg sends it as IPv4). false leaves the send to the kernel: a combination it fails
// (a mapped group or a sockaddr_in from a v6only socket or one bound to an IPv6 address, an
// IPv6 group from a socket bound to a mapped address).
func (u *UDP) mcWire(local, dst netip.Addr) (netip.Addr, bool) {
	u.mu.Lock()
	family, v6only := u.family, u.v6only
	u.mu.Unlock()
	switch {
	case family == unix.AF_INET:
		return dst, dst.Is4() && local.Is4()
	case family != unix.AF_INET6:
		return netip.Addr{}, false
	case dst.Is4() || dst.Is4In6():
		return dst.Unmap(), !v6only && (local.IsUnspecified() || local.Is4In6())
	}
	return dst.WithZone(""), !local.Is4In6() && !local.Is4()
}

// egress is a remembered mcEgress6 answer.
type egress struct {
	group   netip.Addr
	ifindex int
	at      int64
	src     netip.Addr
	oif     int
	ok      bool
}

// egressTTL is how long an egress answer stands: a route is asked again when the directory
// changed (a member joined or left, any socket bound) only after it.
const egressTTL = 1e9 // ns

// egress6 is mcEgress6, remembered for egressTTL.
func (u *UDP) egress6(group netip.Addr, ifindex int) (netip.Addr, int, bool) {
	now := nanotime()
	if e := u.egress.Load(); e != nil && e.group == group && e.ifindex == ifindex && now-e.at < egressTTL {
		return e.src, e.oif, e.ok
	}
	src, oif, ok := mcEgress6(group, ifindex)
	u.egress.Store(&egress{group: group, ifindex: ifindex, at: now, src: src, oif: oif, ok: ok})
	return src, oif, ok
}

// loopbackIndex is the loopback interface's index in every network namespace (the kernel's
// LOOPBACK_IFINDEX).
const loopbackIndex = 1

// mcEgress6 is how the kernel sends a datagram to the IPv6 group (ifindex: the socket's
// IPV6_MULTICAST_IF, 0 for none): the source address an unbound socket's datagram carries and
// the interface it leaves through; false without a route (the kernel fails the send).
// Through lo the kernel neither loops a group's datagram back nor delivers it (its neighbour
// entry cannot be made), so the caller leaves those to the kernel. vishvananda/netlink asks the
// kernel (RTM_GETROUTE, `ip -6 route get GROUP oif IFINDEX`) over a netlink socket of its own
// made for the call.
func mcEgress6(group netip.Addr, ifindex int) (src netip.Addr, oif int, ok bool) {
	routes, err := netlink.RouteGetWithOptions(net.IP(group.AsSlice()), &netlink.RouteGetOptions{OifIndex: ifindex})
	if err != nil || len(routes) == 0 {
		return src, 0, false
	}
	rt := routes[0]
	if a, ok := netip.AddrFromSlice(rt.Src); ok {
		src = a.Unmap()
	}
	return src, rt.LinkIndex, true
}

// markSender flags the socket's binding as a multicast ring sender (once), publishing a socket
// that got its port from this send at once (lazy.go); false when it is not published.
func (u *UDP) markSender(fd int) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.lazy.Load() && !u.closed && u.gaveUp == transport.ReasonNone {
		u.openLocked(fd)
	}
	if !u.published || u.closed || u.gaveUp != transport.ReasonNone {
		return false
	}
	if !u.mcSender {
		u.mcSender = true
		u.publishLocked(fd, u.inbox.Load())
	}
	return true
}

// fanout copies a datagram the kernel sent to a group into the rings of the route's members.
func (u *UDP) fanout(r *route, bufs [][]byte, total int) {
	for _, t := range r.mc {
		name := r.name[:mcNameLen]
		if t.v6 {
			name = r.name6[:]
		}
		wake, err := t.out.send(name, bufs, total, false)
		switch {
		case err == nil:
			u.ringTx.Add(1)
			if wake {
				ringBell(u.env.ringerFD(), t.bell)
			}
		case err == ring.ErrClosed:
			u.route.Store(nil)
		default:
			u.dropped()
		}
	}
}

// sendMulticast sends a datagram to a group: through the kernel, then into the members' rings.
// A plain send (no control message, no flag the rings do not honour) that only reaches sockets
// of this namespace, all of them ring members, skips the kernel (mchost.go).
func (u *UDP) sendMulticast(c *transport.Call, dst netip.AddrPort, bufs [][]byte, total int, plain bool) (int, int, bool) {
	r := u.mcRoute(c.FD, dst)
	if plain && r != nil && r.hostOnly && len(r.mc) > 0 && r.hostServed() {
		if capture.On() {
			u.tapMulticast(c.FD, dst, bufs, total, true)
		}
		u.fanout(r, bufs, total)
		return total, 0, false
	}
	n, errno, _ := u.kernelSend(c)
	if errno == 0 && capture.On() {
		u.tapMulticast(c.FD, dst, bufs, total, r != nil && len(r.mc) > 0)
	}
	if errno == 0 && r != nil && len(r.mc) > 0 {
		u.fanout(r, bufs, total)
	}
	return n, int(errno), true
}

// firstNotCopy drops the kernel's loopback copies of multicast datagrams the socket gets through
// rings from the head of the kernel socket's queue, and reports whether something else is there
// for the receive to take (a datagram, or an error). The caller holds rxmu, so the datagram it
// then receives is the one looked at. Only sockets with joins look.
func (u *UDP) firstNotCopy(fd int) bool {
	if !u.pktinfoOn.Load() {
		return true
	}
	for i := 0; i < maxCopies; i++ {
		src, group, errno := peekOrigin(fd)
		if errno == unix.EAGAIN {
			return false
		}
		if errno != 0 || !group.IsValid() {
			return true
		}
		if !group.IsMulticast() || !src.IsValid() || !u.admits(group, src.Addr()) || !u.ringSender(src) {
			return true
		}
		if dropQueued(fd) != 0 {
			return true
		}
		u.dups.Add(1)
	}
	return false // more copies than one call drops: the next one goes on
}

// ringSender is discovery's MulticastSender(src), remembered for senderTTL while the directory
// does not change: the lookup scans the table and reads /proc for liveness, too much for every
// kernel datagram of a busy group. The caller holds rxmu.
func (u *UDP) ringSender(src netip.AddrPort) bool {
	c := &u.senderCache
	gen, now := u.env.dir.Gen(), nanotime()
	if c.src == src && c.gen == gen && now-c.at < senderTTL {
		return c.yes
	}
	*c = senderCache{src: src, gen: gen, at: now, yes: u.env.dir.MulticastSender(src)}
	return c.yes
}

// senderCache is the last ringSender answer.
type senderCache struct {
	src netip.AddrPort
	gen uint64
	at  int64
	yes bool
}

// senderTTL bounds how long a ringSender answer is used: a flagged sender that died keeps its
// entry until the directory is swept, and only the lookup checks its liveness.
const senderTTL = 10e6 // ns

// maxCopies bounds how many loopback copies one receive drops.
const maxCopies = 64

// pktinfoDst reads the destination address from an IP_PKTINFO or IPV6_PKTINFO control message
// (an IPv4 one mapped in the latter comes back unmapped); the zero Addr when there is none.
func pktinfoDst(ctl []byte) netip.Addr {
	for len(ctl) >= unix.SizeofCmsghdr {
		h := (*[unix.SizeofCmsghdr]byte)(ctl)
		l := int(binary.NativeEndian.Uint64(h[0:8]))
		level := int32(binary.NativeEndian.Uint32(h[8:12]))
		typ := int32(binary.NativeEndian.Uint32(h[12:16]))
		if l < unix.SizeofCmsghdr || l > len(ctl) {
			return netip.Addr{}
		}
		if level == unix.IPPROTO_IP && typ == unix.IP_PKTINFO && l >= unix.SizeofCmsghdr+unix.SizeofInet4Pktinfo {
			// struct in_pktinfo { int ipi_ifindex; struct in_addr ipi_spec_dst, ipi_addr; }
			return netip.AddrFrom4([4]byte(ctl[unix.SizeofCmsghdr+8 : unix.SizeofCmsghdr+12]))
		}
		if level == unix.IPPROTO_IPV6 && typ == unix.IPV6_PKTINFO && l >= unix.SizeofCmsghdr+unix.SizeofInet6Pktinfo {
			// struct in6_pktinfo { struct in6_addr ipi6_addr; int ipi6_ifindex; }
			return netip.AddrFrom16([16]byte(ctl[unix.SizeofCmsghdr : unix.SizeofCmsghdr+16])).Unmap()
		}
		ctl = ctl[min((l+7)&^7, len(ctl)):]
	}
	return netip.Addr{}
}

// pktinfoOption is the option that makes a socket of family report its datagrams' destination:
// IP_PKTINFO, or for AF_INET6 IPV6_RECVPKTINFO (IPv4 datagrams' mapped).
func pktinfoOption(family int) [2]int {
	if family == unix.AF_INET6 {
		return [2]int{unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO}
	}
	return [2]int{unix.IPPROTO_IP, unix.IP_PKTINFO}
}

// ipOptionSet follows the IPPROTO_IP and IPPROTO_IPV6 options the transport depends on, read
// back from the kernel socket after the program set them.
func (u *UDP) ipOptionSet(fd, level, name int) {
	switch [2]int{level, name} {
	case [2]int{unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP}, [2]int{unix.IPPROTO_IP, unix.IP_MULTICAST_IF},
		[2]int{unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_LOOP}, [2]int{unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF}:
		u.route.Store(nil) // mcRoute reads them again
	case [2]int{unix.IPPROTO_IP, unix.IP_MULTICAST_ALL}, [2]int{unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL}:
		u.mu.Lock()
		if in := u.inbox.Load(); in != nil && u.published {
			u.publishLocked(fd, in)
		}
		u.mu.Unlock()
	case [2]int{unix.IPPROTO_IP, unix.IP_PKTINFO}, [2]int{unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO}:
		u.mu.Lock()
		defer u.mu.Unlock()
		if !u.pktinfoOn.Load() && !u.pktinfoOwn {
			u.pktOpt = pktinfoOption(u.familyLocked(fd))
		}
		if [2]int{level, name} != u.pktOpt {
			return // not the one the transport uses (the option sends the socket back to the kernel)
		}
		if optOn(fd, level, name) {
			u.pktinfoOwn = true // the program's now; it sends the socket back to the kernel
		} else {
			u.pktinfoOwn = false
			u.pktinfoOn.Store(false)
			if len(u.joins) > 0 && unix.SetsockoptInt(fd, level, name, 1) == nil {
				u.pktinfoOn.Store(true)
				u.kernelReadOff()
			}
		}
	}
}

// OptionValue corrects the value getsockopt read from the kernel socket for an option the
// transport set for itself: IP_PKTINFO (IPV6_RECVPKTINFO) reads as the program left it (off).
// val and vlen are the program's buffer and length as the kernel filled them.
func (u *UDP) OptionValue(level, name int, val []byte) {
	if len(val) == 0 {
		return
	}
	u.mu.Lock()
	internal := u.pktinfoOn.Load() && !u.pktinfoOwn && [2]int{level, name} == u.pktOpt
	u.mu.Unlock()
	if internal {
		clear(val)
	}
}

// sendmmsg sends through the kernel, then copies every message it sent to a group into the
// members' rings.
func (u *UDP) sendmmsg(c *transport.Call) (int, syscall.Errno, bool) {
	vlen := int(uint32(c.A[1]))
	if vlen <= 0 || vlen > umem.MaxIov {
		return u.kernel(c)
	}
	var routes []*route // per message: the group's route, or nil
	peer := u.Peer()
	for i := 0; i < vlen; i++ {
		mp, _ := umem.Mmsghdr(c.A[0], i)
		dst := peer
		if np, nl := umem.MsgName(umem.Msghdr(mp)); np != 0 {
			if nl > unix.SizeofSockaddrAny {
				break
			}
			dst = sysc.ParseSockaddr(umem.Bytes(np, int(nl)))
		}
		if !dst.IsValid() || !dst.Addr().IsMulticast() {
			continue
		}
		if routes == nil {
			routes = make([]*route, vlen)
		}
		routes[i] = u.mcRoute(c.FD, dst)
	}
	if routes != nil && int(c.A[2])&^sendFlags == 0 && hostServedAll(c.A[0], routes) {
		return u.fanoutAll(c.FD, c.A[0], routes), 0, false
	}
	n, errno, os := u.kernelSend(c)
	if errno != 0 || routes == nil {
		return n, errno, os
	}
	var arr [udpcall.MaxBufs][]byte
	for i := 0; i < n && i < vlen; i++ {
		r := routes[i]
		if r == nil || len(r.mc) == 0 {
			continue
		}
		mp, _ := umem.Mmsghdr(c.A[0], i)
		iov, iovlen := umem.MsgIov(umem.Msghdr(mp))
		if iovlen < 0 || iovlen > umem.MaxIov {
			continue
		}
		bufs, total := umem.Iovecs(arr[:0], iov, iovlen)
		if total >= 0 && total <= mcMaxPayload(r.dst) {
			if capture.On() {
				u.tapMulticast(c.FD, r.dst, bufs, total, true)
			}
			u.fanout(r, bufs, total)
		}
	}
	return n, errno, os
}

// hostServedAll reports whether every message of a sendmmsg vector goes to a group whose
// datagrams only ring members would receive (sendMulticast's test, message by message), with no
// control message and a length the rings take.
func hostServedAll(vec uintptr, routes []*route) bool {
	var arr [udpcall.MaxBufs][]byte
	for i, r := range routes {
		if r == nil || !r.hostOnly || len(r.mc) == 0 {
			return false
		}
		mp, _ := umem.Mmsghdr(vec, i)
		m := umem.Msghdr(mp)
		if m.Controllen != 0 {
			return false
		}
		iov, iovlen := umem.MsgIov(m)
		if iovlen < 0 || iovlen > umem.MaxIov {
			return false
		}
		if _, total := umem.Iovecs(arr[:0], iov, iovlen); total < 0 || total > mcMaxPayload(r.dst) {
			return false
		}
	}
	for _, r := range routes {
		if !r.hostServed() {
			return false
		}
	}
	return true
}

// fanoutAll copies every message of a sendmmsg vector into its members' rings and sets each
// message's msg_len, as the kernel's sendmmsg does; it returns the number of messages.
func (u *UDP) fanoutAll(fd int, vec uintptr, routes []*route) int {
	var arr [udpcall.MaxBufs][]byte
	for i, r := range routes {
		mp, lenp := umem.Mmsghdr(vec, i)
		iov, iovlen := umem.MsgIov(umem.Msghdr(mp))
		bufs, total := umem.Iovecs(arr[:0], iov, iovlen)
		if capture.On() {
			u.tapMulticast(fd, r.dst, bufs, total, true)
		}
		u.fanout(r, bufs, total)
		*lenp = uint32(total)
	}
	return len(routes)
}

package xdp

import (
	"errors"
	"net/netip"

	"github.com/goxio/goxio/offload/xdp/packet"
)

// route is how the socket reaches one destination address: through the kernel (why says
// why), or through the TX ring of x with the headers in hdr. It is valid while the Env's
// generation stays gen and until expires.
type route struct {
	dst     netip.Addr
	src     netip.Addr // the socket's bound address when the route was made
	gen     uint64
	expires int64
	kernel  bool
	why     KernelWhy
	x       *xsk
	hdr     packet.Header // MACs and addresses (ports, TOS, TTL, ID are set per datagram)
	mtu     int
	mcast   bool
}

// Route lifetimes: a route through a ring is asked again after routeTTL (the next hop may have
// moved); a kernel route for an unresolved neighbour after unresolvedTTL.
const routeTTL = 1e9 // ns

// routeTo returns how the socket reaches dst, from the cache when it is still valid. local is the
// socket's bound address (its port is set).
func (u *UDP) routeTo(dst netip.Addr, local netip.AddrPort) *route {
	gen := u.env.gen.Load()
	now := nanotime()
	if r := u.route.Load(); r != nil && r.dst == dst && r.src == local.Addr() && r.gen == gen && now < r.expires {
		return r
	}
	r := u.env.lookup(dst, local.Addr(), u.mcLoop.Load(), u.mcIf.Load(), u.txq, now)
	r.gen = gen
	u.route.Store(r)
	return r
}

// lookup asks the kernel for the route to dst and the neighbour cache for its next hop.
func (e *Env) lookup(dst, bound netip.Addr, mcLoop bool, mcIf uint32, txq int, now int64) *route {
	r := &route{dst: dst, src: bound, kernel: true, expires: now + routeTTL}
	if dst.IsLoopback() {
		r.why = WhyLocal
		return r
	}
	if dst.IsMulticast() && mcLoop {
		r.why = WhyMulticastLoop
		return r
	}
	hint := [4]byte{}
	if !bound.IsUnspecified() {
		hint = bound.As4()
	} else if dst.IsMulticast() && mcIf != 0 {
		hint = [4]byte{byte(mcIf >> 24), byte(mcIf >> 16), byte(mcIf >> 8), byte(mcIf)}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		r.why = WhyNotOffloaded
		return r
	}
	nl, err := e.nlLocked()
	if err != nil {
		r.why, r.expires = WhyRouteError, now+int64(unresolvedTTL)
		return r
	}
	rt, err := nl.RouteGet(dst.As4(), hint, 0)
	if err != nil {
		r.why, r.expires = WhyRouteError, now+int64(unresolvedTTL)
		return r
	}
	switch rt.Type {
	case packet.RouteLocal:
		r.why = WhyLocal
		return r
	case packet.RouteBroadcast:
		r.why = WhyBroadcast
		return r
	case packet.RouteUnicast, packet.RouteMulticast:
	default:
		r.why = WhyRouteError
		return r
	}
	ifc := e.ifaceLocked(rt.Ifindex)
	if ifc.err != nil || len(ifc.queues) == 0 || !rt.Link.Ethernet() || !rt.Link.Up() {
		r.why = WhyNotOffloaded
		return r
	}
	src := bound.As4()
	if bound.IsUnspecified() {
		src = rt.Src
	}
	if src == ([4]byte{}) {
		r.why = WhyRouteError
		return r
	}
	var mac packet.MAC
	if rt.Type == packet.RouteMulticast {
		mac = packet.MulticastMAC(dst.As4())
		r.mcast = true
	} else {
		m, res, err := e.neigh.Lookup(nl, rt.Ifindex, rt.NextHop(), now)
		if err != nil && !errors.Is(err, packet.ErrNoNeighbour) || res == packet.Unresolved {
			r.why, r.expires = WhyUnresolved, now+int64(unresolvedTTL)
			return r
		}
		mac = m
	}
	r.kernel = false
	r.x = ifc.queues[txq%len(ifc.queues)]
	r.mtu = rt.MTU
	r.hdr = packet.Header{DstMAC: mac, SrcMAC: rt.Link.MAC, Src: src, Dst: dst.As4(), DontFragment: !r.mcast}
	return r
}

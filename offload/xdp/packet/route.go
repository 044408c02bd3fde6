package packet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RouteType is the kernel's route type (RTN_*) of a route lookup's answer.
type RouteType uint8

// Route types that matter to a sender; others (RTN_BLACKHOLE, ...) keep their kernel number.
const (
	// RouteUnicast: the destination is reached through Route.Ifindex, directly or via a gateway.
	RouteUnicast RouteType = unix.RTN_UNICAST
	// RouteLocal: the destination is an address of this host (in this namespace); not for a NIC.
	RouteLocal RouteType = unix.RTN_LOCAL
	// RouteBroadcast: the destination is a broadcast address.
	RouteBroadcast RouteType = unix.RTN_BROADCAST
	// RouteMulticast: the destination is a multicast group sent out of Route.Ifindex.
	RouteMulticast RouteType = unix.RTN_MULTICAST
)

// String names the route type like `ip route` does.
func (t RouteType) String() string {
	switch t {
	case RouteUnicast:
		return "unicast"
	case RouteLocal:
		return "local"
	case RouteBroadcast:
		return "broadcast"
	case RouteMulticast:
		return "multicast"
	case unix.RTN_BLACKHOLE:
		return "blackhole"
	case unix.RTN_UNREACHABLE:
		return "unreachable"
	case unix.RTN_PROHIBIT:
		return "prohibit"
	}
	return fmt.Sprintf("type-%d", uint8(t))
}

// Route is the kernel's answer to "how would a datagram to Dst leave?" (RTM_GETROUTE, the question
// `ip route get` asks), completed with the output interface.
type Route struct {
	// Type says what the destination is; only RouteUnicast and RouteMulticast destinations leave
	// through a NIC (RouteLocal goes to this host, RouteBroadcast is left to the kernel).
	Type RouteType
	// Dst is the destination that was asked about (IPv4 or IPv6, without a zone).
	Dst netip.Addr
	// Ifindex is the output interface (the loopback interface for RouteLocal).
	Ifindex int
	// Src is the preferred source address (the zero Addr when the kernel gave none: no address
	// on the interface).
	Src netip.Addr
	// Gateway is the next router, the zero Addr when Dst is on-link.
	Gateway netip.Addr
	// Table is the routing table that answered.
	Table uint32
	// RouteMTU is the route's own MTU metric (or a learnt path MTU), 0 when it has none.
	RouteMTU int
	// MTU is the IP MTU to build frames for: RouteMTU when set and below the interface's,
	// else the interface's.
	MTU int
	// HopLimit is the route's hop limit metric (RTAX_HOPLIMIT), 0 when it has none.
	HopLimit int
	// Link is the output interface.
	Link Link
}

// OnLink reports whether Dst is reached without a gateway.
func (r *Route) OnLink() bool { return !r.Gateway.IsValid() }

// NextHop is the address whose MAC a frame to Dst carries: the gateway, or Dst itself on-link.
// For RouteMulticast the MAC is MulticastMAC(Dst) instead, for RouteBroadcast BroadcastMAC.
func (r *Route) NextHop() netip.Addr {
	if r.OnLink() {
		return r.Dst
	}
	return r.Gateway
}

// RouteGet looks up the route a datagram to dst (IPv4 or IPv6; an IPv4-mapped address is asked
// as IPv4; a zone is ignored: pass a link-local destination's interface as oif) would take from
// a socket bound to srcHint (the zero Addr or an unspecified one for none; a non-local srcHint is
// refused by the kernel, ENETUNREACH on the 6.18 kernel tested) whose output interface is forced
// to oif (0 for any; what IP_MULTICAST_IF, SO_BINDTODEVICE or a scope id set), then reads the
// output interface. Unroutable destinations give the kernel's errno (unix.ENETUNREACH,
// unix.EHOSTUNREACH, unix.EACCES for prohibit, unix.EINVAL); a gateway of the other family
// (RTA_VIA) gives an error wrapping errors.ErrUnsupported.
func (c *Conn) RouteGet(dst, srcHint netip.Addr, oif int) (Route, error) {
	dst, srcHint = dst.Unmap().WithZone(""), srcHint.Unmap().WithZone("")
	r, err := c.getRoute(dst, srcHint, oif)
	if err != nil {
		return Route{}, fmt.Errorf("route get %s: %w", dst, err)
	}
	r.Link, err = c.LinkByIndex(r.Ifindex)
	if err != nil {
		return Route{}, fmt.Errorf("route get %s: %w", dst, err)
	}
	r.MTU = r.Link.MTU
	if r.RouteMTU > 0 && r.RouteMTU < r.MTU {
		r.MTU = r.RouteMTU
	}
	return r, nil
}

func (c *Conn) getRoute(dst, srcHint netip.Addr, oif int) (Route, error) {
	h, err := c.handle()
	if err != nil {
		return Route{}, err
	}
	if !dst.IsValid() {
		return Route{}, fmt.Errorf("no destination address: %w", unix.EINVAL)
	}
	opts := &netlink.RouteGetOptions{OifIndex: oif}
	if srcHint.IsValid() && !srcHint.IsUnspecified() {
		if srcHint.Is4() != dst.Is4() {
			return Route{}, fmt.Errorf("source %s of another family: %w", srcHint, unix.EINVAL)
		}
		opts.SrcAddr = net.IP(srcHint.AsSlice())
	}
	rs, err := h.RouteGetWithOptions(net.IP(dst.AsSlice()), opts)
	if err != nil {
		return Route{}, kernelErr(err)
	}
	if len(rs) == 0 || rs[0].LinkIndex == 0 {
		return Route{}, fmt.Errorf("no route with an output interface in the answer: %w", ErrNetlink)
	}
	nr := rs[0]
	if nr.Via != nil {
		return Route{}, fmt.Errorf("gateway of another family (RTA_VIA): %w", errors.ErrUnsupported)
	}
	r := Route{Dst: dst, Type: RouteType(nr.Type), Ifindex: nr.LinkIndex, Src: ipOf(nr.Src, dst),
		Gateway: ipOf(nr.Gw, dst), Table: uint32(nr.Table), RouteMTU: nr.MTU, HopLimit: nr.Hoplimit}
	if !r.Src.IsValid() && srcHint.IsValid() && !srcHint.IsUnspecified() {
		// The kernel echoes the source asked about (RTA_SRC) and gives RTA_PREFSRC only when it
		// would pick another one.
		r.Src = srcHint
	}
	return r, nil
}

package packet

import (
	"errors"
	"fmt"
	"net"

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
	// Dst is the destination that was asked about.
	Dst [4]byte
	// Ifindex is the output interface (the loopback interface for RouteLocal).
	Ifindex int
	// Src is the preferred source address (zero when the kernel gave none: no address on the
	// interface).
	Src [4]byte
	// Gateway is the next router, zero when Dst is on-link.
	Gateway [4]byte
	// Table is the routing table that answered.
	Table uint32
	// RouteMTU is the route's own MTU metric (or a learnt path MTU), 0 when it has none.
	RouteMTU int
	// MTU is the IPv4 MTU to build frames for: RouteMTU when set and below the interface's,
	// else the interface's.
	MTU int
	// Link is the output interface.
	Link Link
}

// OnLink reports whether Dst is reached without a gateway.
func (r *Route) OnLink() bool { return r.Gateway == [4]byte{} }

// NextHop is the address whose MAC a frame to Dst carries: the gateway, or Dst itself on-link.
// For RouteMulticast the MAC is MulticastMAC(Dst) instead, for RouteBroadcast BroadcastMAC.
func (r *Route) NextHop() [4]byte {
	if r.OnLink() {
		return r.Dst
	}
	return r.Gateway
}

// RouteGet looks up the route a datagram to dst would take from a socket bound to srcHint (zero
// for none; a non-local srcHint is refused by the kernel, ENETUNREACH on the 6.18 kernel tested)
// whose output interface is forced to oif (0 for any; what IP_MULTICAST_IF or SO_BINDTODEVICE
// set), then reads the output interface. Unroutable destinations give the kernel's errno
// (unix.ENETUNREACH, unix.EHOSTUNREACH, unix.EACCES for prohibit, unix.EINVAL); a gateway that is
// not IPv4 (RTA_VIA) gives an error wrapping errors.ErrUnsupported.
func (c *Conn) RouteGet(dst, srcHint [4]byte, oif int) (Route, error) {
	r, err := c.getRoute(dst, srcHint, oif)
	if err != nil {
		return Route{}, fmt.Errorf("route get %s: %w", ipString(dst), err)
	}
	r.Link, err = c.LinkByIndex(r.Ifindex)
	if err != nil {
		return Route{}, fmt.Errorf("route get %s: %w", ipString(dst), err)
	}
	r.MTU = r.Link.MTU
	if r.RouteMTU > 0 && r.RouteMTU < r.MTU {
		r.MTU = r.RouteMTU
	}
	return r, nil
}

func (c *Conn) getRoute(dst, srcHint [4]byte, oif int) (Route, error) {
	h, err := c.handle()
	if err != nil {
		return Route{}, err
	}
	opts := &netlink.RouteGetOptions{OifIndex: oif}
	if srcHint != [4]byte{} {
		opts.SrcAddr = net.IP(srcHint[:])
	}
	rs, err := h.RouteGetWithOptions(net.IP(dst[:]), opts)
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
	r := Route{Dst: dst, Type: RouteType(nr.Type), Ifindex: nr.LinkIndex, Src: ip4(nr.Src),
		Gateway: ip4(nr.Gw), Table: uint32(nr.Table), RouteMTU: nr.MTU}
	if r.Src == [4]byte{} {
		// The kernel echoes the source asked about (RTA_SRC) and gives RTA_PREFSRC only when it
		// would pick another one.
		r.Src = srcHint
	}
	return r, nil
}

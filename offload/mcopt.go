package offload

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"
)

// mcAction is what a multicast membership option does to an offloaded UDP socket.
type mcAction int

const (
	mcNone  mcAction = iota // not a membership option
	mcJoin                  // joins group (for source, when set)
	mcLeave                 // leaves group (the source's join, or every join of group)
	mcOther                 // source filters the rings do not model: the socket goes back to the kernel
)

// gsrGroup and gsrSource are the offsets of the sockaddr_storage fields of struct group_req and
// struct group_source_req (after the 32-bit interface index and its padding).
const (
	gsrGroup        = 8
	gsrSource       = gsrGroup + sockaddrStorage
	gsrSize         = gsrSource + sockaddrStorage // sizeof(struct group_source_req)
	sockaddrStorage = 128                         // sizeof(struct sockaddr_storage)
)

// parseMcOption reads a membership option the kernel accepted. IPPROTO_IP: ip_mreq/ip_mreqn
// (IP_ADD/DROP_MEMBERSHIP), ip_mreq_source (IP_ADD/DROP_SOURCE_MEMBERSHIP), group_req and
// group_source_req (MCAST_*) with IPv4 groups (also on a dual-stack AF_INET6 socket, where they
// join IPv4 groups). IPPROTO_IPV6: ipv6_mreq (IPV6_ADD/DROP_MEMBERSHIP, alias
// IPV6_JOIN/LEAVE_GROUP) and group_req/group_source_req with IPv6 groups. Anything it cannot
// read, and the source filters (block, unblock, msfilter), is mcOther.
func parseMcOption(level, name int, b []byte) (act mcAction, group, source netip.Addr) {
	switch level {
	case unix.IPPROTO_IP:
		act, group, source = parseMc4(name, b)
	case unix.IPPROTO_IPV6:
		act, group, source = parseMc6(name, b)
	default:
		return mcNone, group, source
	}
	if act != mcJoin && act != mcLeave {
		return act, netip.Addr{}, netip.Addr{}
	}
	if !group.IsMulticast() {
		return mcOther, netip.Addr{}, netip.Addr{}
	}
	return act, group, source
}

// leaveIf is mcLeave when leave, the join's act otherwise.
func leaveIf(leave bool, act mcAction, group, source netip.Addr) (mcAction, netip.Addr, netip.Addr) {
	if leave && act == mcJoin {
		act = mcLeave
	}
	return act, group, source
}

// parseMc4 reads an IPPROTO_IP membership option.
func parseMc4(name int, b []byte) (act mcAction, group, source netip.Addr) {
	in4 := func(off int) netip.Addr {
		if len(b) < off+4 {
			return netip.Addr{}
		}
		return netip.AddrFrom4([4]byte(b[off : off+4]))
	}
	sin := func(off int) netip.Addr {
		if len(b) < off+8 || binary.NativeEndian.Uint16(b[off:]) != unix.AF_INET {
			return netip.Addr{}
		}
		return in4(off + 4)
	}
	switch name {
	case unix.IP_ADD_MEMBERSHIP, unix.IP_DROP_MEMBERSHIP:
		return leaveIf(name == unix.IP_DROP_MEMBERSHIP, mcJoin, in4(0), source)
	case unix.IP_ADD_SOURCE_MEMBERSHIP, unix.IP_DROP_SOURCE_MEMBERSHIP:
		// struct ip_mreq_source { imr_multiaddr; imr_interface; imr_sourceaddr; }
		return sourceJoin(name == unix.IP_DROP_SOURCE_MEMBERSHIP, in4(0), in4(8))
	case unix.MCAST_JOIN_GROUP, unix.MCAST_LEAVE_GROUP:
		return leaveIf(name == unix.MCAST_LEAVE_GROUP, mcJoin, sin(gsrGroup), source)
	case unix.MCAST_JOIN_SOURCE_GROUP, unix.MCAST_LEAVE_SOURCE_GROUP:
		return sourceJoin(name == unix.MCAST_LEAVE_SOURCE_GROUP, sin(gsrGroup), sin(gsrSource))
	case unix.IP_BLOCK_SOURCE, unix.IP_UNBLOCK_SOURCE, unix.MCAST_BLOCK_SOURCE, unix.MCAST_UNBLOCK_SOURCE,
		unix.IP_MSFILTER, unix.MCAST_MSFILTER:
		return mcOther, group, source
	}
	return mcNone, group, source
}

// parseMc6 reads an IPPROTO_IPV6 membership option.
func parseMc6(name int, b []byte) (act mcAction, group, source netip.Addr) {
	in6 := func(off int) netip.Addr {
		if len(b) < off+16 {
			return netip.Addr{}
		}
		return netip.AddrFrom16([16]byte(b[off : off+16]))
	}
	sin6 := func(off int) netip.Addr {
		// struct sockaddr_in6 { family; port; flowinfo; addr; scope_id; }
		if len(b) < off+24 || binary.NativeEndian.Uint16(b[off:]) != unix.AF_INET6 {
			return netip.Addr{}
		}
		return in6(off + 8)
	}
	switch name {
	case unix.IPV6_ADD_MEMBERSHIP, unix.IPV6_DROP_MEMBERSHIP:
		// struct ipv6_mreq { ipv6mr_multiaddr; ipv6mr_interface; }
		return leaveIf(name == unix.IPV6_DROP_MEMBERSHIP, mcJoin, in6(0), source)
	case unix.MCAST_JOIN_GROUP, unix.MCAST_LEAVE_GROUP:
		return leaveIf(name == unix.MCAST_LEAVE_GROUP, mcJoin, sin6(gsrGroup), source)
	case unix.MCAST_JOIN_SOURCE_GROUP, unix.MCAST_LEAVE_SOURCE_GROUP:
		return sourceJoin(name == unix.MCAST_LEAVE_SOURCE_GROUP, sin6(gsrGroup), sin6(gsrSource))
	case unix.MCAST_BLOCK_SOURCE, unix.MCAST_UNBLOCK_SOURCE, unix.MCAST_MSFILTER:
		return mcOther, group, source
	}
	return mcNone, group, source
}

// sourceJoin is a source-specific join (or, with leave, leave); mcOther when the source cannot
// be read.
func sourceJoin(leave bool, group, source netip.Addr) (mcAction, netip.Addr, netip.Addr) {
	if !source.IsValid() {
		return mcOther, netip.Addr{}, netip.Addr{}
	}
	return leaveIf(leave, mcJoin, group, source)
}

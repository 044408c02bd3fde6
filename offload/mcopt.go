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

// parseMcOption reads an IPPROTO_IP membership option the kernel accepted: ip_mreq/ip_mreqn
// (IP_ADD/DROP_MEMBERSHIP), ip_mreq_source (IP_ADD/DROP_SOURCE_MEMBERSHIP), group_req and
// group_source_req (MCAST_*). IPv4 groups only; anything it cannot read is mcOther.
func parseMcOption(level, name int, b []byte) (act mcAction, group, source netip.Addr) {
	if level != unix.IPPROTO_IP {
		return mcNone, group, source
	}
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
		act, group = mcJoin, in4(0)
	case unix.IP_ADD_SOURCE_MEMBERSHIP, unix.IP_DROP_SOURCE_MEMBERSHIP:
		// struct ip_mreq_source { imr_multiaddr; imr_interface; imr_sourceaddr; }
		act, group, source = mcJoin, in4(0), in4(8)
		if !source.IsValid() {
			return mcOther, netip.Addr{}, netip.Addr{}
		}
	case unix.MCAST_JOIN_GROUP, unix.MCAST_LEAVE_GROUP:
		act, group = mcJoin, sin(gsrGroup)
	case unix.MCAST_JOIN_SOURCE_GROUP, unix.MCAST_LEAVE_SOURCE_GROUP:
		act, group, source = mcJoin, sin(gsrGroup), sin(gsrSource)
		if !source.IsValid() {
			return mcOther, netip.Addr{}, netip.Addr{}
		}
	case unix.IP_BLOCK_SOURCE, unix.IP_UNBLOCK_SOURCE, unix.MCAST_BLOCK_SOURCE, unix.MCAST_UNBLOCK_SOURCE,
		unix.IP_MSFILTER, unix.MCAST_MSFILTER:
		return mcOther, group, source
	default:
		return mcNone, group, source
	}
	switch name {
	case unix.IP_DROP_MEMBERSHIP, unix.IP_DROP_SOURCE_MEMBERSHIP, unix.MCAST_LEAVE_GROUP, unix.MCAST_LEAVE_SOURCE_GROUP:
		act = mcLeave
	}
	if !group.IsMulticast() {
		return mcOther, netip.Addr{}, netip.Addr{}
	}
	return act, group, source
}

package offload

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseMcOption(t *testing.T) {
	g, src, ifa := [4]byte{239, 1, 2, 3}, [4]byte{10, 0, 0, 7}, [4]byte{127, 0, 0, 1}
	mreq := append(append([]byte{}, g[:]...), ifa[:]...)
	mreqn := append(append([]byte{}, mreq...), 1, 0, 0, 0)
	mreqSrc := append(append([]byte{}, mreq...), src[:]...)
	sin := func(b []byte, off int, a [4]byte) {
		binary.NativeEndian.PutUint16(b[off:], unix.AF_INET)
		copy(b[off+4:], a[:])
	}
	greq := make([]byte, gsrGroup+sockaddrStorage)
	sin(greq, gsrGroup, g)
	gsreq := make([]byte, gsrSize)
	sin(gsreq, gsrGroup, g)
	sin(gsreq, gsrSource, src)
	G, S := netip.AddrFrom4(g), netip.AddrFrom4(src)
	for _, c := range []struct {
		name          string
		opt           int
		val           []byte
		act           mcAction
		group, source netip.Addr
	}{
		{"ip_mreq", unix.IP_ADD_MEMBERSHIP, mreq, mcJoin, G, netip.Addr{}},
		{"ip_mreqn", unix.IP_ADD_MEMBERSHIP, mreqn, mcJoin, G, netip.Addr{}},
		{"drop", unix.IP_DROP_MEMBERSHIP, mreq, mcLeave, G, netip.Addr{}},
		{"source join", unix.IP_ADD_SOURCE_MEMBERSHIP, mreqSrc, mcJoin, G, S},
		{"source drop", unix.IP_DROP_SOURCE_MEMBERSHIP, mreqSrc, mcLeave, G, S},
		{"group_req", unix.MCAST_JOIN_GROUP, greq, mcJoin, G, netip.Addr{}},
		{"group_req leave", unix.MCAST_LEAVE_GROUP, greq, mcLeave, G, netip.Addr{}},
		{"group_source_req", unix.MCAST_JOIN_SOURCE_GROUP, gsreq, mcJoin, G, S},
		{"group_source_req leave", unix.MCAST_LEAVE_SOURCE_GROUP, gsreq, mcLeave, G, S},
		{"block", unix.IP_BLOCK_SOURCE, mreqSrc, mcOther, netip.Addr{}, netip.Addr{}},
		{"msfilter", unix.MCAST_MSFILTER, gsreq, mcOther, netip.Addr{}, netip.Addr{}},
		{"short", unix.IP_ADD_MEMBERSHIP, mreq[:3], mcOther, netip.Addr{}, netip.Addr{}},
		{"unicast group", unix.IP_ADD_MEMBERSHIP, append([]byte{10, 0, 0, 1}, ifa[:]...), mcOther, netip.Addr{}, netip.Addr{}},
		{"ipv6 group_req", unix.MCAST_JOIN_GROUP, make([]byte, gsrGroup+sockaddrStorage), mcOther, netip.Addr{}, netip.Addr{}},
		{"not membership", unix.IP_TOS, []byte{1, 0, 0, 0}, mcNone, netip.Addr{}, netip.Addr{}},
	} {
		act, group, source := parseMcOption(unix.IPPROTO_IP, c.opt, c.val)
		if act != c.act || group != c.group || source != c.source {
			t.Errorf("%s: got %v %v %v, want %v %v %v", c.name, act, group, source, c.act, c.group, c.source)
		}
	}
	// IPPROTO_IPV6: ipv6_mreq and group_req/group_source_req with sockaddr_in6.
	g6, s6 := netip.MustParseAddr("ff15::101"), netip.MustParseAddr("fd00::1")
	mreq6 := append(g6.AsSlice(), 3, 0, 0, 0)
	sin6 := func(b []byte, off int, a netip.Addr) {
		binary.NativeEndian.PutUint16(b[off:], unix.AF_INET6)
		copy(b[off+8:], a.AsSlice())
	}
	greq6 := make([]byte, gsrGroup+sockaddrStorage)
	sin6(greq6, gsrGroup, g6)
	gsreq6 := make([]byte, gsrSize)
	sin6(gsreq6, gsrGroup, g6)
	sin6(gsreq6, gsrSource, s6)
	for _, c := range []struct {
		name          string
		opt           int
		val           []byte
		act           mcAction
		group, source netip.Addr
	}{
		{"ipv6_mreq", unix.IPV6_JOIN_GROUP, mreq6, mcJoin, g6, netip.Addr{}},
		{"ipv6_mreq leave", unix.IPV6_LEAVE_GROUP, mreq6, mcLeave, g6, netip.Addr{}},
		{"group_req", unix.MCAST_JOIN_GROUP, greq6, mcJoin, g6, netip.Addr{}},
		{"group_req leave", unix.MCAST_LEAVE_GROUP, greq6, mcLeave, g6, netip.Addr{}},
		{"group_source_req", unix.MCAST_JOIN_SOURCE_GROUP, gsreq6, mcJoin, g6, s6},
		{"group_source_req leave", unix.MCAST_LEAVE_SOURCE_GROUP, gsreq6, mcLeave, g6, s6},
		{"block", unix.MCAST_BLOCK_SOURCE, gsreq6, mcOther, netip.Addr{}, netip.Addr{}},
		{"unblock", unix.MCAST_UNBLOCK_SOURCE, gsreq6, mcOther, netip.Addr{}, netip.Addr{}},
		{"msfilter", unix.MCAST_MSFILTER, gsreq6, mcOther, netip.Addr{}, netip.Addr{}},
		{"ipv4 group_req", unix.MCAST_JOIN_GROUP, greq, mcOther, netip.Addr{}, netip.Addr{}},
		{"short", unix.IPV6_JOIN_GROUP, mreq6[:15], mcOther, netip.Addr{}, netip.Addr{}},
		{"unicast group", unix.IPV6_JOIN_GROUP, append(s6.AsSlice(), 0, 0, 0, 0), mcOther, netip.Addr{}, netip.Addr{}},
		{"v6only", unix.IPV6_V6ONLY, []byte{1, 0, 0, 0}, mcNone, netip.Addr{}, netip.Addr{}},
		{"multicast hops", unix.IPV6_MULTICAST_HOPS, []byte{1, 0, 0, 0}, mcNone, netip.Addr{}, netip.Addr{}},
	} {
		act, group, source := parseMcOption(unix.IPPROTO_IPV6, c.opt, c.val)
		if act != c.act || group != c.group || source != c.source {
			t.Errorf("ipv6 %s: got %v %v %v, want %v %v %v", c.name, act, group, source, c.act, c.group, c.source)
		}
	}
	if act, _, _ := parseMcOption(unix.SOL_SOCKET, unix.IP_ADD_MEMBERSHIP, mreq); act != mcNone {
		t.Errorf("SOL_SOCKET level parsed as a membership: %v", act)
	}
}

func FuzzParseMcOption(f *testing.F) {
	f.Add(false, unix.IP_ADD_MEMBERSHIP, []byte{239, 1, 1, 1, 127, 0, 0, 1})
	f.Add(false, unix.MCAST_JOIN_SOURCE_GROUP, make([]byte, gsrSize))
	f.Add(true, unix.IPV6_JOIN_GROUP, append(netip.MustParseAddr("ff02::1").AsSlice(), 1, 0, 0, 0))
	f.Add(true, unix.MCAST_JOIN_SOURCE_GROUP, make([]byte, gsrSize))
	f.Fuzz(func(t *testing.T, v6 bool, opt int, val []byte) {
		level := unix.IPPROTO_IP
		if v6 {
			level = unix.IPPROTO_IPV6
		}
		act, group, source := parseMcOption(level, opt, val)
		if (act == mcJoin || act == mcLeave) && !group.IsMulticast() {
			t.Fatalf("%v with group %v", act, group)
		}
		if source.IsValid() && act != mcJoin && act != mcLeave {
			t.Fatalf("source %v with %v", source, act)
		}
	})
}

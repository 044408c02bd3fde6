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
	if act, _, _ := parseMcOption(unix.SOL_SOCKET, unix.IP_ADD_MEMBERSHIP, mreq); act != mcNone {
		t.Errorf("SOL_SOCKET level parsed as a membership: %v", act)
	}
}

func FuzzParseMcOption(f *testing.F) {
	f.Add(unix.IP_ADD_MEMBERSHIP, []byte{239, 1, 1, 1, 127, 0, 0, 1})
	f.Add(unix.MCAST_JOIN_SOURCE_GROUP, make([]byte, gsrSize))
	f.Fuzz(func(t *testing.T, opt int, val []byte) {
		act, group, source := parseMcOption(unix.IPPROTO_IP, opt, val)
		if (act == mcJoin || act == mcLeave) && !group.IsMulticast() {
			t.Fatalf("%v with group %v", act, group)
		}
		if source.IsValid() && act != mcJoin && act != mcLeave {
			t.Fatalf("source %v with %v", source, act)
		}
	})
}

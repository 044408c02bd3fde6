package xdp

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHopLimitOf: the hop limit of an IPv6 datagram from what getsockopt(IPV6_UNICAST_HOPS)
// read: the route's when it reads that, the program's value otherwise, and no answer (the kernel
// sends) when it reads only the all-interfaces default while the route's differs.
func TestHopLimitOf(t *testing.T) {
	cases := []struct {
		read, route, all int
		want             int
		ok               bool
	}{
		{64, 64, 64, 64, true},
		{9, 64, 64, 9, true},
		{32, 32, 64, 32, true},
		{64, 32, 64, 0, false},
		{9, 32, 64, 9, true},
		{255, 7, 64, 255, true},
	}
	for _, c := range cases {
		u := &UDP{}
		u.hops.Store(int32(c.read))
		got, ok := u.hopLimitOf(&route{hops: c.route, allHops: c.all})
		if got != c.want || ok != c.ok {
			t.Errorf("read %d, route %d, all %d: %d %v, want %d %v", c.read, c.route, c.all, got, ok, c.want, c.ok)
		}
	}
}

// TestFlowLabel: automatic flow labels are one per flow (the same for every datagram of it,
// different for another port or address), 20 bits, with the stateless flag when the namespace
// asks for it, and 0 when automatic labels are off.
func TestFlowLabel(t *testing.T) {
	a, b := netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	u := &UDP{}
	if l := u.flowLabel(a, b, 1000, 2000); l != 0 {
		t.Errorf("labels off: %#x", l)
	}
	u.autoLabel.Store(true)
	l := u.flowLabel(a, b, 1000, 2000)
	if l != u.flowLabel(a, b, 1000, 2000) || l&^0xfffff != 0 {
		t.Errorf("label %#x: not stable or over 20 bits", l)
	}
	others := map[uint32]bool{l: true}
	for _, o := range []uint32{u.flowLabel(a, b, 1001, 2000), u.flowLabel(a, b, 1000, 2001), u.flowLabel(b, a, 1000, 2000)} {
		others[o] = true
	}
	if len(others) != 4 {
		t.Errorf("four flows share labels: %v", others)
	}
	u.stateless.Store(true)
	if s := u.flowLabel(a, b, 1000, 2000); s != l|flowLabelStatelessFlag {
		t.Errorf("stateless flag: %#x, want %#x", s, l|flowLabelStatelessFlag)
	}
}

// TestSockaddr6: the source name of a datagram received by an AF_INET6 socket: an IPv4 source
// v4-mapped, flow info 0, the scope id given.
func TestSockaddr6(t *testing.T) {
	var sa [unix.SizeofSockaddrInet6]byte
	for i := range sa {
		sa[i] = 0xee
	}
	u := &UDP{}
	u.v6.Store(true)
	u.srcName(&sa, netip.MustParseAddrPort("10.0.0.9:700"), 0)
	want := netip.MustParseAddr("::ffff:10.0.0.9").As16()
	if binary.NativeEndian.Uint16(sa[:]) != unix.AF_INET6 || binary.BigEndian.Uint16(sa[2:]) != 700 ||
		binary.NativeEndian.Uint32(sa[4:]) != 0 || [16]byte(sa[8:24]) != want || binary.NativeEndian.Uint32(sa[24:]) != 0 {
		t.Errorf("IPv4 source: %x", sa)
	}
	u.srcName(&sa, netip.MustParseAddrPort("[fe80::2]:53"), 7)
	if [16]byte(sa[8:24]) != netip.MustParseAddr("fe80::2").As16() || binary.NativeEndian.Uint32(sa[24:]) != 7 {
		t.Errorf("link-local source: %x", sa)
	}
}

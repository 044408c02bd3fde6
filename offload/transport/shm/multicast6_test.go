package shm

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport/transporttest"
)

// TestMcRecord: the names of multicast ring records, both forms, fit a ring record and split
// back into the sockaddr the member receives, the source and the group; unicast names are not
// taken for one.
func TestMcRecord(t *testing.T) {
	if mcNameLen6 > ring.MaxName || mcNameLen > ring.MaxName {
		t.Fatalf("multicast record names of %d and %d bytes, a ring record carries %d", mcNameLen, mcNameLen6, ring.MaxName)
	}
	from := netip.MustParseAddrPort("[fd00::1]:4000")
	group := netip.MustParseAddr("ff15::101")
	var sin6 [unix.SizeofSockaddrInet6]byte
	sysc.PutSockaddr(sin6[:], unix.AF_INET6, from)
	name := make([]byte, mcNameLen6)
	putMcSin6(name, from, 0)
	copy(name[mcSin6Len:], group.AsSlice())
	var buf [unix.SizeofSockaddrInet6]byte
	for i := range buf {
		buf[i] = 0xee // a flow label left from before must not show
	}
	sa, src, g, ok := mcRecord(name, &buf)
	if !ok || src != from.Addr() || g != group || len(sa) != unix.SizeofSockaddrInet6 || string(sa) != string(sin6[:]) {
		t.Errorf("IPv6 record: ok %v src %v group %v sockaddr %x, want %v %v %x", ok, src, g, sa, from.Addr(), group, sin6)
	}
	// A link-local source carries its scope id (the interface).
	ll := netip.MustParseAddrPort("[fe80::1]:4000")
	putMcSin6(name, ll, 7)
	if sa, src, _, ok := mcRecord(name, &buf); !ok || src != ll.Addr() || binary.NativeEndian.Uint32(sa[24:]) != 7 ||
		binary.NativeEndian.Uint32(sa[4:]) != 0 || sysc.ParseSockaddr(sa) != ll {
		t.Errorf("link-local source: ok %v src %v sockaddr %x, want scope id 7, flow label 0", ok, src, sa)
	}
	// An IPv4 group for a dual-stack member: source and group mapped, returned unmapped.
	from4 := netip.MustParseAddrPort("10.9.0.1:4000")
	g4 := netip.MustParseAddr("239.1.2.3")
	g16 := g4.As16()
	putMcSin6(name, from4, 0)
	copy(name[mcSin6Len:], g16[:])
	if sa, src, g, ok := mcRecord(name, &buf); !ok || src != from4.Addr() || g != g4 || sysc.ParseSockaddr(sa).Addr() != netip.AddrFrom16(from4.Addr().As16()) {
		t.Errorf("mapped record: ok %v src %v group %v sockaddr %v", ok, src, g, sysc.ParseSockaddr(sa))
	}
	// An AF_INET member's record.
	var sin [mcNameLen]byte
	putSockaddr4(sin[:], from4)
	copy(sin[unix.SizeofSockaddrInet4:], g4.AsSlice())
	binary.BigEndian.PutUint16(sin[unix.SizeofSockaddrInet4+4:], 4000)
	if sa, src, g, ok := mcRecord(sin[:], &buf); !ok || src != from4.Addr() || g != g4 || len(sa) != unix.SizeofSockaddrInet4 {
		t.Errorf("IPv4 record: ok %v src %v group %v sockaddr %x", ok, src, g, sa)
	}
	for _, l := range []int{unix.SizeofSockaddrInet4, unix.SizeofSockaddrInet6} {
		if _, _, _, ok := mcRecord(make([]byte, l), &buf); ok {
			t.Errorf("a unicast name of %d bytes taken for a multicast record", l)
		}
	}
}

// TestPktinfoDst reads the destination of IP_PKTINFO and IPV6_PKTINFO messages (an IPv4 one
// mapped in the latter, as the kernel reports an IPv4 datagram to an AF_INET6 socket).
func TestPktinfoDst(t *testing.T) {
	msg := transporttest.Cmsg
	in4 := make([]byte, unix.SizeofInet4Pktinfo)
	copy(in4[8:], []byte{239, 1, 2, 3})
	in6 := make([]byte, unix.SizeofInet6Pktinfo)
	copy(in6, netip.MustParseAddr("ff15::101").AsSlice())
	m6 := make([]byte, unix.SizeofInet6Pktinfo)
	a := netip.AddrFrom16(netip.MustParseAddr("239.1.2.4").As16()).As16()
	copy(m6, a[:])
	other := msg(unix.SOL_SOCKET, unix.SO_TIMESTAMP, make([]byte, 16))
	for _, c := range []struct {
		name string
		ctl  []byte
		want netip.Addr
	}{
		{"IP_PKTINFO", msg(unix.IPPROTO_IP, unix.IP_PKTINFO, in4), netip.MustParseAddr("239.1.2.3")},
		{"IPV6_PKTINFO", msg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6), netip.MustParseAddr("ff15::101")},
		{"IPV6_PKTINFO mapped", msg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, m6), netip.MustParseAddr("239.1.2.4")},
		{"after another message", append(other, msg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6)...), netip.MustParseAddr("ff15::101")},
		{"short", msg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, in6[:8]), netip.Addr{}},
		{"none", other, netip.Addr{}},
	} {
		if got := pktinfoDst(c.ctl); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestIgmp6Users sums a group's memberships in /proc/net/igmp6 text, and refuses a line it
// cannot read.
func TestIgmp6Users(t *testing.T) {
	text := "1    lo              ff020000000000000000000000000001     1 0000000C 0\n" +
		"2    gx0             ff150000000000000000000000000101     2 00000004 0\n" +
		"3    gx1             ff150000000000000000000000000101     1 00000004 0\n" +
		"2    gx0             ff020000000000000000000000000001     1 0000000C 0\n"
	if n := igmp6Users([]byte(text), netip.MustParseAddr("ff15::101")); n != 3 {
		t.Errorf("ff15::101: %d users, want 3", n)
	}
	if n := igmp6Users([]byte(text), netip.MustParseAddr("ff15::102")); n != 0 {
		t.Errorf("ff15::102: %d users, want 0", n)
	}
	if n := igmp6Users([]byte("2 gx0 ff15zz 1 0 0\n"), netip.MustParseAddr("ff15::101")); n != -1 {
		t.Errorf("a line that does not parse: %d, want -1", n)
	}
}

// TestHostOnly6: interface-local groups (scope 1) never leave the host; others may.
func TestHostOnly6(t *testing.T) {
	for s, want := range map[string]bool{"ff01::1:77": true, "ff11::1": true, "ff02::1": false, "ff15::101": false,
		"fd00::1": false, "239.1.2.3": false} {
		if got := hostOnly6(netip.MustParseAddr(s)); got != want {
			t.Errorf("%s: host only %v, want %v", s, got, want)
		}
	}
}

// TestMcWire: the group a socket's datagram goes to as the kernel sends it, or the kernel's
// judgement.
func TestMcWire(t *testing.T) {
	ip := netip.MustParseAddr
	for _, c := range []struct {
		family      int
		v6only      bool
		local, dst  string
		want        string
		wantRouteOK bool
	}{
		{unix.AF_INET, false, "0.0.0.0", "239.1.2.3", "239.1.2.3", true},
		{unix.AF_INET6, false, "::", "ff15::101", "ff15::101", true},
		{unix.AF_INET6, false, "::", "::ffff:239.1.2.3", "239.1.2.3", true},
		{unix.AF_INET6, false, "::ffff:10.9.0.1", "::ffff:239.1.2.3", "239.1.2.3", true},
		{unix.AF_INET6, true, "::", "::ffff:239.1.2.3", "", false},        // v6only: the kernel fails it
		{unix.AF_INET6, false, "fd00::1", "::ffff:239.1.2.3", "", false},  // IPv6 address, IPv4 group
		{unix.AF_INET6, false, "::ffff:10.9.0.1", "ff15::101", "", false}, // mapped address, IPv6 group
		{unix.AF_INET6, false, "::", "239.1.2.3", "239.1.2.3", true},      // a sockaddr_in: sent as IPv4
		{unix.AF_INET6, true, "::", "239.1.2.3", "", false},               // a sockaddr_in from a v6only socket: ENETUNREACH
		{unix.AF_INET6, false, "fd00::1", "ff02::1:5", "ff02::1:5", true}, // link-local group, global source
	} {
		u := &UDP{family: c.family, v6only: c.v6only}
		got, ok := u.mcWire(ip(c.local), ip(c.dst))
		if ok != c.wantRouteOK || ok && got != ip(c.want) {
			t.Errorf("family %d v6only %v local %s dst %s: %v %v, want %s %v", c.family, c.v6only, c.local, c.dst, got, ok, c.want, c.wantRouteOK)
		}
	}
}

// TestKernelReceivers6 counts real IPv6 sockets of the test's namespace the kernel would give a
// datagram to an IPv6 group's port: bound to the wildcard or the group, not to another address,
// not connected elsewhere.
func TestKernelReceivers6(t *testing.T) {
	if _, err := readProc("/proc/net/udp6", nil); err != nil {
		t.Skipf("no /proc/net/udp6: %v", err)
	}
	group := netip.MustParseAddr("ff15::1:99")
	open := func(bindAddr netip.Addr, port int) int {
		t.Helper()
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet6{Addr: bindAddr.As16(), Port: port}); err != nil {
			t.Skipf("bind [%v]:%d: %v (no IPv6 here)", bindAddr, port, err)
		}
		return fd
	}
	first := open(netip.IPv6Unspecified(), 0)
	port := int(sockname(first).Port())
	dst := netip.AddrPortFrom(group, uint16(port))
	src := netip.MustParseAddrPort("[::1]:40000")
	if n := kernelReceivers(dst, src); n != 1 {
		t.Fatalf("one wildcard socket on the port: %d receivers", n)
	}
	open(group, port)
	open(netip.IPv6Loopback(), port) // another address: not a receiver
	toSrc := open(netip.IPv6Unspecified(), port)
	if err := unix.Connect(toSrc, &unix.SockaddrInet6{Addr: src.Addr().As16(), Port: 40000}); err != nil {
		t.Fatal(err)
	}
	elsewhere := open(netip.IPv6Unspecified(), port)
	if err := unix.Connect(elsewhere, &unix.SockaddrInet6{Addr: src.Addr().As16(), Port: 40001}); err != nil {
		t.Fatal(err)
	}
	if n := kernelReceivers(dst, src); n != 2 {
		t.Errorf("wildcard, group (and three that are not receivers): %d receivers, want 2", n)
	}
	if n := kernelReceivers(netip.AddrPortFrom(group, uint16(port+1)), src); n != 0 {
		t.Errorf("another port: %d receivers, want 0", n)
	}
}

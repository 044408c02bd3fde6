package shm

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKernelReceivers counts real sockets of the test's namespace: the ones the kernel would
// give a datagram to the group's port (wildcard, group address) and not the others (another
// address, connected: connect gives a wildcard socket the route's source as its address).
func TestKernelReceivers(t *testing.T) {
	if _, err := readProc("/proc/net/udp", nil); err != nil {
		t.Skipf("no /proc/net/udp: %v", err)
	}
	group := netip.MustParseAddr("239.1.2.3")
	open := func(bindAddr [4]byte, port int) int {
		t.Helper()
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: bindAddr, Port: port}); err != nil {
			t.Fatalf("bind %v:%d: %v", bindAddr, port, err)
		}
		return fd
	}
	first := open([4]byte{}, 0)
	sa, err := unix.Getsockname(first)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*unix.SockaddrInet4).Port
	dst := netip.AddrPortFrom(group, uint16(port))
	src := netip.MustParseAddrPort("127.0.0.1:40000")
	if n := kernelReceivers(dst, src); n != 1 {
		t.Fatalf("one wildcard socket on the port: %d receivers", n)
	}
	open(group.As4(), port)
	open([4]byte{127, 0, 0, 1}, port) // another address: not a receiver
	toSrc := open([4]byte{}, port)
	if err := unix.Connect(toSrc, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: 40000}); err != nil {
		t.Fatal(err)
	}
	elsewhere := open([4]byte{}, port)
	if err := unix.Connect(elsewhere, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: 40001}); err != nil {
		t.Fatal(err)
	}
	if n := kernelReceivers(dst, src); n != 2 {
		t.Errorf("wildcard, group (and three that are not receivers): %d receivers, want 2", n)
	}
	if n := kernelReceivers(netip.AddrPortFrom(group, uint16(port+1)), src); n != 0 {
		t.Errorf("another port: %d receivers, want 0", n)
	}
}

// TestProcTables checks the parsers on table text: addresses as the kernel prints them, IPv6
// sockets on the port, raw UDP sockets, and lines that do not parse (they count, so the kernel
// send is never skipped on a guess).
func TestProcTables(t *testing.T) {
	const hdr = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n"
	dst := netip.MustParseAddrPort("239.7.7.7:17000") // 0x4268
	src := netip.MustParseAddrPort("127.0.0.1:5000")  // 0x1388
	udp := hdr +
		"  1: 070707EF:4268 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1 2 0 0\n" +
		"  2: 00000000:4268 0100007F:1388 01 00000000:00000000 00:00000000 00000000     0        0 2 2 0 0\n" +
		"  3: 00000000:4268 0100007F:1389 01 00000000:00000000 00:00000000 00000000     0        0 3 2 0 0\n" +
		"  4: 0100007F:4268 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4 2 0 0\n" +
		"  5: 00000000:4269 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 5 2 0 0\n"
	if n := countUDPGroup([]byte(udp), dst, src, 1); n != 2 {
		t.Errorf("udp: %d receivers, want 2 (the group's socket and the one connected to the source)", n)
	}
	if n := countUDPGroup([]byte(udp+"  6: garbage\n  7: 0000000G:4268 00000000:0000 07\n"), dst, src, 1); n != 3 {
		t.Errorf("udp with a bad line: %d receivers, want 3 (a line with three fields that does not parse counts)", n)
	}
	udp6 := hdr +
		"  1: 00000000000000000000000000000000:4268 00000000000000000000000000000000:0000 07 0 0\n" +
		"  2: 0000000000000000FFFF0000070707EF:4268 00000000000000000000000000000000:0000 07 0 0\n" +
		"  3: 0000000000000000FFFF00000100007F:4268 00000000000000000000000000000000:0000 07 0 0\n" +
		"  4: 00000000000000000000000000000000:4269 00000000000000000000000000000000:0000 07 0 0\n"
	if n := countUDP6([]byte(udp6), dst); n != 2 {
		t.Errorf("udp6: %d receivers, want 2 (the wildcard and the mapped group)", n)
	}
	raw := hdr + "  1: 00000000:0001 00000000:0000 07 0 0\n"
	if rawUDP([]byte(raw), 1) {
		t.Error("an ICMP raw socket taken for a UDP one")
	}
	if !rawUDP([]byte(raw+"  2: 00000000:0011 00000000:0000 07 0 0\n"), 1) {
		t.Error("a raw UDP socket not seen")
	}
}

// BenchmarkKernelReceivers is the cost of one count of the kernel's sockets (a publisher makes
// one at most every 100 ms while the memberships do not change).
func BenchmarkKernelReceivers(b *testing.B) {
	dst := netip.MustParseAddrPort("239.1.2.3:17000")
	src := netip.MustParseAddrPort("127.0.0.1:40000")
	for b.Loop() {
		kernelReceivers(dst, src)
	}
}

// BenchmarkGroupJoins is the cost of one look at the memberships (one a millisecond while
// sending).
func BenchmarkGroupJoins(b *testing.B) {
	g := netip.MustParseAddr("239.1.2.3")
	for b.Loop() {
		groupJoins(g)
	}
}

// TestIgmpUsers sums a group's memberships over interfaces and refuses a line it cannot read.
func TestIgmpUsers(t *testing.T) {
	const igmp = "Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter\n" +
		"1\tlo        :     2      V3\n" +
		"\t\t\t\t070707EF     8 0:00000000\t\t0\n" +
		"\t\t\t\t010000E0     1 0:00000000\t\t0\n" +
		"4\teth0      :     2      V3\n" +
		"\t\t\t\t070707EF     1 0:00000000\t\t0\n"
	g := netip.MustParseAddr("239.7.7.7")
	if n := igmpUsers([]byte(igmp), g); n != 9 {
		t.Errorf("239.7.7.7: %d memberships, want 9 (8 on lo, 1 on eth0)", n)
	}
	if n := igmpUsers([]byte(igmp), netip.MustParseAddr("239.7.7.8")); n != 0 {
		t.Errorf("a group nobody joined: %d memberships", n)
	}
	if n := igmpUsers([]byte(igmp+"\t\t\t\tZZZ\n"), g); n != -1 {
		t.Errorf("a bad group line: %d, want -1", n)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	real := netip.MustParseAddr("239.1.2.4")
	before := groupJoins(real)
	mreq := &unix.IPMreq{Multiaddr: real.As4()}
	if err := unix.SetsockoptIPMreq(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq); err != nil {
		t.Skipf("cannot join a group here: %v", err)
	}
	if after := groupJoins(real); before < 0 || after != before+1 {
		t.Errorf("memberships of %v: %d before a join, %d after", real, before, after)
	}
}

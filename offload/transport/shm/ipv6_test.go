package shm

import (
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// udp6Sock is a kernel AF_INET6 UDP socket with its transport, bound to addr:0 with IPV6_V6ONLY
// as given.
func udp6Sock(t *testing.T, e *Env, addr string, v6only bool) (int, *UDP) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	u := e.NewUDP(func() bool { return false })
	t.Cleanup(func() { u.Close(); unix.Close(fd) })
	v := 0
	if v6only {
		v = 1
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v); err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet6{Addr: netip.MustParseAddr(addr).As16()}); err != nil {
		t.Fatal(err)
	}
	u.Bound(fd)
	return fd, u
}

// sendName sends b to the raw sockaddr name through the transport.
func sendName(u *UDP, fd int, b, name []byte) (int, unix.Errno, bool) {
	sc := scratches.Get().(*scratch)
	defer scratches.Put(sc)
	m := sc.m
	copy(m, b)
	copy(m[len(b):], name)
	c := transport.Call{Op: transport.OpSendto, FD: fd, A: [5]uintptr{uintptr(unsafe.Pointer(&m[0])), uintptr(len(b)), 0, uintptr(unsafe.Pointer(&m[len(b)])), uintptr(len(name))}}
	return u.TransferVia(c)
}

// recvName receives into b and returns the raw source name the call wrote.
func recvName(u *UDP, fd int, b []byte, flags int) (int, unix.Errno, bool, []byte) {
	var sa [unix.SizeofSockaddrAny]byte
	n, e, os, l := recvInto(u, fd, b, flags, sa[:])
	return n, e, os, sa[:l]
}

// recvInto receives into b and the source name into sa (its length returned, at most len(sa)),
// through a scratch's memory.
func recvInto(u *UDP, fd int, b []byte, flags int, sa []byte) (int, unix.Errno, bool, int) {
	sc := scratches.Get().(*scratch)
	defer scratches.Put(sc)
	m := sc.m
	lOff := (len(b) + len(sa) + 3) &^ 3
	lp := (*uint32)(unsafe.Pointer(&m[lOff]))
	*lp = uint32(len(sa))
	c := transport.Call{Op: transport.OpRecvfrom, FD: fd, A: [5]uintptr{uintptr(unsafe.Pointer(&m[0])), uintptr(len(b)), uintptr(flags), uintptr(unsafe.Pointer(&m[len(b)])), uintptr(unsafe.Pointer(lp))}}
	n, e, os := u.TransferVia(c)
	copy(b, m[:len(b)])
	l := min(int(*lp), len(sa))
	copy(sa, m[len(b):len(b)+l])
	return n, e, os, l
}

// nameOf is a as a socket of family receives it.
func nameOf(family int, a netip.AddrPort) []byte {
	var b [unix.SizeofSockaddrInet6]byte
	return b[:sysc.PutSockaddr(b[:], family, a)]
}

// TestIPv6Rings: AF_INET6 sockets exchange datagrams through rings exactly where the kernel
// delivers, and every receive reports the source as the kernel does for the receiver's family:
// IPv6 to IPv6 over ::1, IPv4 to a dual-stack socket (source ::ffff:127.0.0.1), a dual-stack
// socket to an IPv4 one through a mapped destination (source a sockaddr_in). A v6only socket is
// not reached by IPv4 and cannot send to a mapped address: the kernel's answer, as without rings.
func TestIPv6Rings(t *testing.T) {
	e := testEnv(t, 1000)
	dual, du := udp6Sock(t, e, "::", false)
	v6, vu := udp6Sock(t, e, "::1", false)
	only, ou := udp6Sock(t, e, "::", true)
	v4, fu := udpSock(t, e, true)
	dualPort, v6Addr, onlyPort, v4Addr := sysc.Sockname(dual).Port(), sysc.Sockname(v6), sysc.Sockname(only).Port(), sysc.Sockname(v4)
	loop4, loop6 := netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()
	mapped := netip.AddrFrom16(loop4.As16())
	buf := make([]byte, 64)
	for _, tc := range []struct {
		name         string
		su           *UDP
		sfd          int
		to           []byte
		ru           *UDP
		rfd          int
		wantFrom     []byte
		wantRing     bool
		wantSendFail unix.Errno
	}{
		{"v6 to v6 over ::1", vu, v6, nameOf(unix.AF_INET6, netip.AddrPortFrom(loop6, dualPort)), du, dual,
			nameOf(unix.AF_INET6, v6Addr), true, 0},
		{"v4 to dual-stack", fu, v4, nameOf(unix.AF_INET, netip.AddrPortFrom(loop4, dualPort)), du, dual,
			nameOf(unix.AF_INET6, netip.AddrPortFrom(mapped, v4Addr.Port())), true, 0},
		{"dual-stack to v4 through a mapped address", du, dual, nameOf(unix.AF_INET6, netip.AddrPortFrom(mapped, v4Addr.Port())), fu, v4,
			nameOf(unix.AF_INET, netip.AddrPortFrom(loop4, dualPort)), true, 0},
		{"v6 to v6only", vu, v6, nameOf(unix.AF_INET6, netip.AddrPortFrom(loop6, onlyPort)), ou, only,
			nameOf(unix.AF_INET6, v6Addr), true, 0},
		{"wildcard v6only to v6 (the route's source)", ou, only, nameOf(unix.AF_INET6, netip.AddrPortFrom(loop6, dualPort)), du, dual,
			nameOf(unix.AF_INET6, netip.AddrPortFrom(loop6, onlyPort)), true, 0},
		{"v6only to a mapped address", ou, only, nameOf(unix.AF_INET6, netip.AddrPortFrom(mapped, v4Addr.Port())), nil, 0,
			nil, false, unix.ENETUNREACH},
	} {
		msg := []byte("to " + tc.name)
		n, errno, os := sendName(tc.su, tc.sfd, msg, tc.to)
		if tc.wantSendFail != 0 {
			if errno != tc.wantSendFail || !os {
				t.Errorf("%s: send %d %v os=%v, want the kernel's %v", tc.name, n, errno, os, tc.wantSendFail)
			}
			continue
		}
		if n != len(msg) || errno != 0 || os == tc.wantRing {
			t.Errorf("%s: send %d %v os=%v", tc.name, n, errno, os)
			continue
		}
		n, errno, os, from := recvName(tc.ru, tc.rfd, buf, unix.MSG_DONTWAIT)
		if n != len(msg) || errno != 0 || os == tc.wantRing || string(buf[:n]) != string(msg) {
			t.Errorf("%s: receive %d %v os=%v %q", tc.name, n, errno, os, buf[:max(n, 0)])
			continue
		}
		if string(from) != string(tc.wantFrom) {
			t.Errorf("%s: source %v (%d bytes), want %v (%d bytes)", tc.name, sysc.ParseSockaddr(from), len(from), sysc.ParseSockaddr(tc.wantFrom), len(tc.wantFrom))
		}
	}
	// IPv4 does not reach a v6only socket: through the kernel, which drops it (nobody else has
	// the port), and nothing arrives.
	if _, errno, os := sendName(fu, v4, []byte("x"), nameOf(unix.AF_INET, netip.AddrPortFrom(loop4, onlyPort))); errno != 0 || !os {
		t.Errorf("v4 to v6only: %v os=%v, want a kernel send", errno, os)
	}
	if n, errno, _, _ := recvName(ou, only, buf, unix.MSG_DONTWAIT); errno != unix.EAGAIN {
		t.Errorf("v6only socket received %d bytes (%v) from IPv4", n, errno)
	}
}

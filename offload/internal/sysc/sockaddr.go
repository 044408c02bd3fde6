package sysc

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"
)

// ParseSockaddr decodes a sockaddr_in or sockaddr_in6 of len(b) bytes (an IPv4-mapped IPv6
// address stays mapped; the scope id and flow label are dropped); the zero AddrPort for anything
// else.
func ParseSockaddr(b []byte) netip.AddrPort {
	if len(b) < 2 {
		return netip.AddrPort{}
	}
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) < unix.SizeofSockaddrInet4 {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4]))
	case unix.AF_INET6:
		if len(b) < unix.SizeofSockaddrInet6 {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), binary.BigEndian.Uint16(b[2:4]))
	}
	return netip.AddrPort{}
}

// PutSockaddr writes a into b as a socket of family receives it from the kernel: a sockaddr_in
// for AF_INET (a must be IPv4 or IPv4-mapped), a sockaddr_in6 for AF_INET6 with an IPv4 address
// mapped (::ffff:a.b.c.d), flow label and scope id 0. It returns the length written (b holds at
// least unix.SizeofSockaddrInet6 bytes).
func PutSockaddr(b []byte, family int, a netip.AddrPort) int {
	if family == unix.AF_INET {
		clear(b[:unix.SizeofSockaddrInet4])
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], a.Port())
		ip := a.Addr().Unmap().As4()
		copy(b[4:8], ip[:])
		return unix.SizeofSockaddrInet4
	}
	clear(b[:unix.SizeofSockaddrInet6])
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], a.Port())
	ip := a.Addr().As16()
	copy(b[8:24], ip[:])
	return unix.SizeofSockaddrInet6
}

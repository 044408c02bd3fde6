package sysc

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// Sockname returns the local address of a socket (the zero AddrPort when it has none or is not
// IPv4/IPv6).
func Sockname(fd int) netip.AddrPort {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}
	}
	return fromSockaddr(sa)
}

// Peername returns the remote address of a connected socket, or the zero AddrPort.
func Peername(fd int) netip.AddrPort {
	sa, err := unix.Getpeername(fd)
	if err != nil {
		return netip.AddrPort{}
	}
	return fromSockaddr(sa)
}

func fromSockaddr(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// Inode returns the inode number of the socket behind fd (as /proc/PID/fd shows it), or 0.
func Inode(fd int) uint64 {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Ino
}

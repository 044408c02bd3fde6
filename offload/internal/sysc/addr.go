package sysc

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// Sockname returns the local address of a socket (the zero AddrPort when it has none or is not
// IPv4/IPv6).
func Sockname(fd int) netip.AddrPort { return sockName(fd, false) }

// Peername returns the remote address of a connected socket, or the zero AddrPort.
func Peername(fd int) netip.AddrPort { return sockName(fd, true) }

// Inode returns the inode number of the socket behind fd (as /proc/PID/fd shows it), or 0.
func Inode(fd int) uint64 {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Ino
}

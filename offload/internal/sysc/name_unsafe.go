package sysc

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Socket names with one system call each. x/sys/unix's Getsockname and Getpeername follow every
// AF_INET or AF_INET6 answer with getsockopt(SO_PROTOCOL) (to recognise L2TP sockets), which the
// engine, asking for TCP and UDP sockets only, does not need: a connection per request paid
// four extra system calls for it.

// sockName calls getsockname(2) (or getpeername(2) when peer is set) on fd.
//
// Invariant for the unsafe use: buf and n live on this frame for the whole call, the kernel
// writes at most n bytes into buf, and buf is read only after the call returned.
func sockName(fd int, peer bool) netip.AddrPort {
	var buf unix.RawSockaddrAny
	n := uint32(unsafe.Sizeof(buf))
	trap := uintptr(unix.SYS_GETSOCKNAME)
	if peer {
		trap = unix.SYS_GETPEERNAME
	}
	_, _, errno := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&buf)), uintptr(unsafe.Pointer(&n)))
	if errno != 0 {
		return netip.AddrPort{}
	}
	b := (*[unix.SizeofSockaddrAny]byte)(unsafe.Pointer(&buf))[:min(int(n), unix.SizeofSockaddrAny)]
	return ParseSockaddr(b)
}

package sysc

import (
	"encoding/binary"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Invariant for everything in this file: p points into the program's memory and was accepted by
// the kernel in the call that just succeeded (so it is mapped and at least n bytes long), or is 0.
// The memory is C memory: the Go garbage collector neither moves nor frees it, so turning the
// address into an unsafe.Pointer (cptr) is sound; it must never be used for Go memory.

// cptr turns the address of C memory into a pointer.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// SockaddrIn reads an IPv4 or IPv6 socket address the program passed (bind, connect, sendto).
func SockaddrIn(p uintptr, n uint32) netip.AddrPort {
	if p == 0 || n < 2 {
		return netip.AddrPort{}
	}
	b := unsafe.Slice((*byte)(cptr(p)), n)
	switch binary.NativeEndian.Uint16(b[0:2]) {
	case unix.AF_INET:
		if n < unix.SizeofSockaddrInet4 {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4]))
	case unix.AF_INET6:
		if n < unix.SizeofSockaddrInet6 {
			return netip.AddrPort{}
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), binary.BigEndian.Uint16(b[2:4]))
	}
	return netip.AddrPort{}
}

// Uint32At reads a 32-bit value (a socklen_t) the kernel has just read or written.
func Uint32At(p uintptr) uint32 {
	if p == 0 {
		return 0
	}
	return *(*uint32)(cptr(p))
}

// IntAt reads a C int the kernel has just read or written (an option value, an ioctl argument).
func IntAt(p uintptr) int32 {
	if p == 0 {
		return 0
	}
	return *(*int32)(cptr(p))
}

// MsgName returns the destination address of a msghdr the kernel has just accepted.
func MsgName(msg uintptr) netip.AddrPort {
	if msg == 0 {
		return netip.AddrPort{}
	}
	m := (*unix.Msghdr)(cptr(msg))
	return SockaddrIn(uintptr(unsafe.Pointer(m.Name)), m.Namelen)
}

// MmsgName returns the destination address of the first entry of an mmsghdr vector.
func MmsgName(vec uintptr) netip.AddrPort { return MsgName(vec) }

// MmsgLen returns the msg_len of entry i of an mmsghdr vector (the bytes that entry moved).
func MmsgLen(vec uintptr, i int) int {
	const entry = unsafe.Sizeof(unix.Msghdr{}) + 8 // struct mmsghdr: msghdr, unsigned int, padding
	return int(*(*uint32)(cptr(vec + uintptr(i)*entry + unsafe.Sizeof(unix.Msghdr{}))))
}

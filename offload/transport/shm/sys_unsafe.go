package shm

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// Invariant for this file: Go memory handed to the kernel is converted with
// uintptr(unsafe.Pointer(...)) in the argument list of unix.Syscall6 itself, which keeps it alive
// and in place for the call; the program's memory is passed as uintptr (the garbage collector
// does not manage it).

// drainRaw takes up to bellBatch pending rings of a doorbell in one recvmmsg(2): a message
// without buffers takes its datagram whole (truncated), so nothing needs to be read into. The
// array is the call's own (the system call reads and writes it before it returns).
func drainRaw(fd int) (int, syscall.Errno) {
	var msgs [bellBatch]unix.Mmsghdr
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), bellBatch, unix.MSG_DONTWAIT, 0, 0)
	return sysc.Result(r, e)
}

// recvvRaw is recvmsg(2) into the program's iovec array (readv on a socket), with flags.
func recvvRaw(fd int, iov uintptr, iovcnt int, flags int) (int, syscall.Errno) {
	// iov is the program's C memory: the garbage collector never moves it.
	m := unix.Msghdr{Iov: (*unix.Iovec)(*(*unsafe.Pointer)(unsafe.Pointer(&iov)))}
	m.SetIovlen(iovcnt)
	r, _, e := unix.Syscall6(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m)), uintptr(flags), 0, 0, 0)
	return sysc.Result(r, e)
}

// bindRaw binds a socket to a library-owned sockaddr_un.
func bindRaw(fd int, a *bellAddr) syscall.Errno {
	_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&a.sa[0])), uintptr(a.len))
	return e
}

// sendBellRaw sends one byte to a doorbell, never blocking.
func sendBellRaw(fd int, a *bellAddr) syscall.Errno {
	var b [1]byte
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1,
		unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, uintptr(unsafe.Pointer(&a.sa[0])), uintptr(a.len))
	return e
}

// ppoll2 waits for one of two fds to be readable, with an optional timeout.
func ppoll2(fd0, fd1 int, ts *unix.Timespec) (r0, r1 int16, errno syscall.Errno) {
	fds := [2]unix.PollFd{{Fd: int32(fd0), Events: unix.POLLIN | unix.POLLRDHUP}, {Fd: int32(fd1), Events: unix.POLLIN}}
	_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 2, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	return fds[0].Revents, fds[1].Revents, e
}

// peekOrigin looks at the next datagram queued on the kernel socket without taking it: its
// source and its destination (from the IP_PKTINFO or IPV6_PKTINFO control message: the socket
// has the option on), both unmapped; dst is the zero Addr without one. EAGAIN when nothing is
// queued. The buffers live on this frame, which the kernel writes for the call's duration only.
func peekOrigin(fd int) (src netip.AddrPort, dst netip.Addr, errno syscall.Errno) {
	var sa [unix.SizeofSockaddrInet6]byte
	var ctl [64]byte
	m := unix.Msghdr{Name: (*byte)(unsafe.Pointer(&sa[0])), Namelen: uint32(len(sa)), Control: &ctl[0]}
	m.SetControllen(len(ctl))
	_, _, e := unix.Syscall6(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m)),
		unix.MSG_PEEK|unix.MSG_DONTWAIT|unix.MSG_TRUNC, 0, 0, 0)
	if e != 0 {
		return src, dst, e
	}
	src = sysc.ParseSockaddr(sa[:min(int(m.Namelen), len(sa))])
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	return src, pktinfoDst(ctl[:min(int(m.Controllen), len(ctl))]), 0
}

// dropQueued takes the next datagram off the kernel socket, never blocking.
func dropQueued(fd int) syscall.Errno {
	var m unix.Msghdr
	_, _, e := unix.Syscall6(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m)), unix.MSG_DONTWAIT, 0, 0, 0)
	return e
}

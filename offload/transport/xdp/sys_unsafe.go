package xdp

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// Invariant for this file: Go memory handed to the kernel is converted with
// uintptr(unsafe.Pointer(...)) in the argument list of unix.Syscall6 itself, which keeps it alive
// and in place for the call; the program's memory is passed as uintptr (the garbage collector
// does not manage it).

// recvvRaw is recvmsg(2) into the program's iovec array (readv on a socket), with flags.
func recvvRaw(fd int, iov uintptr, iovcnt int, flags int) (int, syscall.Errno) {
	// iov is the program's C memory: the garbage collector never moves it.
	m := unix.Msghdr{Iov: (*unix.Iovec)(*(*unsafe.Pointer)(unsafe.Pointer(&iov)))}
	m.SetIovlen(iovcnt)
	r, _, e := unix.Syscall6(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m)), uintptr(flags), 0, 0, 0)
	return sysc.Result(r, e)
}

// ppoll waits for the fds, with an optional timeout; the revents are written into fds.
func ppoll(fds []unix.PollFd, ts *unix.Timespec) syscall.Errno {
	_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	return e
}

// writeByte writes one byte to a non-blocking pipe.
func writeByte(fd int) {
	b := [1]byte{1}
	unix.Syscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1)
}

// drainPipe reads a non-blocking pipe until it is empty.
func drainPipe(fd int) {
	var b [64]byte
	for range 16 {
		r, _, e := unix.Syscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e != 0 || int(r) < len(b) {
			return
		}
	}
}

package shmtcp

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// Invariant for this file: Go memory handed to the kernel is converted with
// uintptr(unsafe.Pointer(...)) in the argument list of unix.Syscall6 itself, which keeps it alive
// and in place for the call. Buffers in bufs point into the program's C memory (never moved or
// freed by the garbage collector); iovec arrays built from them live on the Go stack only for the
// call. The kernel checks every address and fails the call with EFAULT.

// recvScratch is recvfrom(2) into a library-owned buffer.
func recvScratch(fd int, b *[64]byte, flags int) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(b)), uintptr(len(b)), uintptr(flags), 0, 0)
	return sysc.Result(r, e)
}

// wakeByte is the content of a wake-up (any value would do: the reader never looks).
var wakeByte = [1]byte{'w'}

// sendByte sends one wake byte, never blocking and never raising SIGPIPE.
func sendByte(fd int) syscall.Errno {
	for range 3 {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&wakeByte[0])), 1,
			unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		if e != unix.EINTR {
			return e
		}
	}
	return unix.EINTR
}

// recvNull is recvfrom(2) with no buffer: with MSG_TRUNC a TCP socket drops up to n bytes.
func recvNull(fd int, n int, flags int) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), 0, uintptr(n), uintptr(flags), 0, 0)
	return sysc.Result(r, e)
}

// maxKernIov is how many buffers one kernel receive of the transport passes.
const maxKernIov = 64

// recvBufs is recvmsg(2) into bufs, at most limit bytes, with flags; no name, no control.
func recvBufs(fd int, bufs [][]byte, limit int, flags int) (int, syscall.Errno) {
	var arr [maxKernIov]unix.Iovec
	n := 0
	for _, b := range bufs {
		if limit <= 0 || n == len(arr) {
			break
		}
		if len(b) == 0 {
			continue
		}
		l := min(len(b), limit)
		arr[n].Base = &b[0]
		arr[n].SetLen(l)
		limit -= l
		n++
	}
	var m unix.Msghdr
	if n > 0 {
		m.Iov = &arr[0]
		m.SetIovlen(n)
	}
	r, _, e := unix.Syscall6(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m)), uintptr(flags), 0, 0, 0)
	return sysc.Result(r, e)
}

// ppoll1 waits for events on fd, with an optional timeout; revents is 0 on timeout.
func ppoll1(fd int, events int16, ts *unix.Timespec) (revents int16, errno syscall.Errno) {
	p := unix.PollFd{Fd: int32(fd), Events: events}
	_, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	return p.Revents, e
}

// ioctlInt is an ioctl(2) that answers an int (FIONREAD, SIOCOUTQ).
func ioctlInt(fd int, req uint) (int, syscall.Errno) {
	var v int32
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&v)))
	if e != 0 {
		return 0, e
	}
	return int(v), 0
}

// offAt is the program's off_t at p (sendfile's *offset): C memory, read and written under the
// caller's fault protection (umem.Protect).
func offAt(p uintptr) *int64 { return (*int64)(*(*unsafe.Pointer)(unsafe.Pointer(&p))) }

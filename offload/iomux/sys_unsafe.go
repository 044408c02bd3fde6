package iomux

import (
	"encoding/binary"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Invariant for this file: addresses passed to the kernel are either the program's memory (which
// the garbage collector does not manage), passed as uintptr, or Go values converted with
// uintptr(unsafe.Pointer(...)) in the argument list of unix.Syscall6 itself, which keeps them
// alive and in place for the call.

func errnoOf(r uintptr, e syscall.Errno) (int, syscall.Errno) {
	if e != 0 {
		return -1, e
	}
	return int(r), 0
}

func sigsetSize(mask uintptr) uintptr {
	if mask != 0 {
		return 8
	}
	return 0
}

// ppoll is the ppoll system call on the program's pollfd array at addr; ts nil waits forever.
func ppoll(addr uintptr, n int, ts *unix.Timespec, mask uintptr) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_PPOLL, addr, uintptr(n), uintptr(unsafe.Pointer(ts)), mask, sigsetSize(mask), 0)
	return errnoOf(r, e)
}

// ppollGo is ppoll on the engine's own pollfd slice.
func ppollGo(fds []unix.PollFd, ts *unix.Timespec, mask uintptr) (int, syscall.Errno) {
	if len(fds) == 0 {
		return ppoll(0, 0, ts, mask)
	}
	r, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
		uintptr(unsafe.Pointer(ts)), mask, sigsetSize(mask), 0)
	return errnoOf(r, e)
}

// epollWait is epoll_pwait (or epoll_pwait2 for a timeout) into the program's event array at addr.
func epollWait(epfd int, addr uintptr, n int, ts *unix.Timespec, mask uintptr) (int, syscall.Errno) {
	if ts == nil {
		r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), addr, uintptr(n), ^uintptr(0), mask, sigsetSize(mask))
		return errnoOf(r, e)
	}
	if ts.Sec == 0 && ts.Nsec == 0 {
		r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), addr, uintptr(n), 0, mask, sigsetSize(mask))
		return errnoOf(r, e)
	}
	r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), addr, uintptr(n), uintptr(unsafe.Pointer(ts)), mask, sigsetSize(mask))
	return errnoOf(r, e)
}

// epollWaitGo is epoll_wait with a zero timeout into the engine's own event buffer.
func epollWaitGo(epfd int, buf []byte) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(len(buf)/epollEventSize), 0, 0, 0)
	return errnoOf(r, e)
}

// epollCtl is epoll_ctl with the event the engine chose.
func epollCtl(epfd, op, fd int, events uint32, data uint64) syscall.Errno {
	var ev [16]byte
	putEvent(ev[:], events, data)
	_, _, e := unix.Syscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(&ev[0])), 0, 0)
	return e
}

// epollCtlRaw is epoll_ctl with the program's event pointer.
func epollCtlRaw(epfd, op, fd int, ev uintptr) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), ev, 0, 0)
	return errnoOf(r, e)
}

// epollEventSize is sizeof(struct epoll_event) (packed on x86-64).
const epollEventSize = int(unsafe.Sizeof(unix.EpollEvent{}))

func putEvent(b []byte, events uint32, data uint64) {
	binary.NativeEndian.PutUint32(b, events)
	binary.NativeEndian.PutUint64(b[epollEventSize-8:], data)
}

func getEvent(b []byte) (uint32, uint64) {
	return binary.NativeEndian.Uint32(b), binary.NativeEndian.Uint64(b[epollEventSize-8:])
}

// unsafePointer converts the counters' address for the transport.SigCounters view (same layout:
// two uint32, see umem.SigCounters).
func unsafePointer(c *[2]uint32) unsafe.Pointer { return unsafe.Pointer(c) }

// pselect6 is the pselect6 system call on the program's fd sets; ts (Go memory) gets the time
// left. mask, when set, is the program's sigset.
func pselect6(n int, r, w, x uintptr, ts *unix.Timespec, mask uintptr) (int, syscall.Errno) {
	var sm *[2]uintptr
	if mask != 0 {
		sm = &[2]uintptr{mask, 8}
	}
	r0, _, e := unix.Syscall6(unix.SYS_PSELECT6, uintptr(n), r, w, x, uintptr(unsafe.Pointer(ts)), uintptr(unsafe.Pointer(sm)))
	return errnoOf(r0, e)
}

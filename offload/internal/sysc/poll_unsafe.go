package sysc

import (
	"encoding/binary"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls of select, poll and epoll (offload/iomux).
//
// Invariant for this file: addresses passed to the kernel are either the program's memory (which
// the garbage collector does not manage), passed as uintptr, or Go values converted with
// uintptr(unsafe.Pointer(...)) in the argument list of unix.Syscall6 itself, which keeps them
// alive and in place for the call.

func sigsetSize(mask uintptr) uintptr {
	if mask != 0 {
		return 8
	}
	return 0
}

// Ppoll is the ppoll system call on the program's pollfd array at addr; ts nil waits forever;
// mask, when set, is the program's sigset.
func Ppoll(addr uintptr, n int, ts *unix.Timespec, mask uintptr) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_PPOLL, addr, uintptr(n), uintptr(unsafe.Pointer(ts)), mask, sigsetSize(mask), 0)
	return Result(r, e)
}

// PpollFds is ppoll on the library's own pollfd slice.
func PpollFds(fds []unix.PollFd, ts *unix.Timespec, mask uintptr) (int, syscall.Errno) {
	if len(fds) == 0 {
		return Ppoll(0, 0, ts, mask)
	}
	r, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
		uintptr(unsafe.Pointer(ts)), mask, sigsetSize(mask), 0)
	return Result(r, e)
}

// EpollWait is epoll_pwait (or epoll_pwait2 for a timeout) into the program's event array at
// addr; ts nil waits forever.
func EpollWait(epfd int, addr uintptr, n int, ts *unix.Timespec, mask uintptr) (int, syscall.Errno) {
	if ts == nil {
		r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), addr, uintptr(n), ^uintptr(0), mask, sigsetSize(mask))
		return Result(r, e)
	}
	if ts.Sec == 0 && ts.Nsec == 0 {
		r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), addr, uintptr(n), 0, mask, sigsetSize(mask))
		return Result(r, e)
	}
	r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), addr, uintptr(n), uintptr(unsafe.Pointer(ts)), mask, sigsetSize(mask))
	return Result(r, e)
}

// EpollEventSize is sizeof(struct epoll_event) (packed on x86-64).
const EpollEventSize = int(unsafe.Sizeof(unix.EpollEvent{}))

// EpollWaitNow is epoll_wait with a zero timeout into the library's own event buffer
// (EpollEventSize bytes per event).
func EpollWaitNow(epfd int, buf []byte) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(len(buf)/EpollEventSize), 0, 0, 0)
	return Result(r, e)
}

// EpollCtl is epoll_ctl with an event the library chose.
func EpollCtl(epfd, op, fd int, events uint32, data uint64) syscall.Errno {
	var ev [16]byte
	PutEpollEvent(ev[:], events, data)
	_, _, e := unix.Syscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(&ev[0])), 0, 0)
	return e
}

// EpollCtlAt is epoll_ctl with the program's event pointer.
func EpollCtlAt(epfd, op, fd int, ev uintptr) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), ev, 0, 0)
	return Result(r, e)
}

// EpollCreate makes an epoll fd (close-on-exec).
func EpollCreate() (int, syscall.Errno) {
	return Result(func() (uintptr, syscall.Errno) {
		r, _, e := unix.RawSyscall(unix.SYS_EPOLL_CREATE1, unix.EPOLL_CLOEXEC, 0, 0)
		return r, e
	}())
}

// PutEpollEvent writes an epoll_event into b.
func PutEpollEvent(b []byte, events uint32, data uint64) {
	binary.NativeEndian.PutUint32(b, events)
	binary.NativeEndian.PutUint64(b[EpollEventSize-8:], data)
}

// EpollEventAt reads the epoll_event at the start of b.
func EpollEventAt(b []byte) (uint32, uint64) {
	return binary.NativeEndian.Uint32(b), binary.NativeEndian.Uint64(b[EpollEventSize-8:])
}

// Pselect6 is the pselect6 system call on the program's fd sets; ts (Go memory) gets the time
// left. mask, when set, is the program's sigset.
func Pselect6(n int, r, w, x uintptr, ts *unix.Timespec, mask uintptr) (int, syscall.Errno) {
	var sm *[2]uintptr
	if mask != 0 {
		sm = &[2]uintptr{mask, 8}
	}
	r0, _, e := unix.Syscall6(unix.SYS_PSELECT6, uintptr(n), r, w, x, uintptr(unsafe.Pointer(ts)), uintptr(unsafe.Pointer(sm)))
	return Result(r0, e)
}

// IsEpoll reports whether fd is an epoll fd.
func IsEpoll(fd int) bool { return FDLink(fd) == "anon_inode:[eventpoll]" }

// IsOpen reports whether fd is an open fd.
func IsOpen(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil
}

// Gettid is the calling thread's id.
func Gettid() int { return unix.Gettid() }

// MapShared maps size bytes of shared anonymous memory (inherited by a forked child).
func MapShared(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
}

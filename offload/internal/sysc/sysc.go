// Package sysc is the engine's only way to the kernel: raw system calls through
// golang.org/x/sys/unix, never through libc, whose socket symbols the library itself interposes
// (a libc call from the engine would come back into the engine).
package sysc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Syscall6 makes a system call that may block; the thread is handed back to the Go scheduler
// while it does. A signal handler of the program that interrupts it ends it with EINTR or
// restarts it, exactly as for the program's own call.
func Syscall6(nr, a0, a1, a2, a3, a4, a5 uintptr) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(nr, a0, a1, a2, a3, a4, a5)
	if e != 0 {
		return -1, e
	}
	return int(r), 0
}

// Close closes a kernel fd.
func Close(fd int) syscall.Errno {
	_, e := Syscall6(unix.SYS_CLOSE, uintptr(fd), 0, 0, 0, 0, 0)
	return e
}

// CloseRange closes the descriptors first to last (close_range(2), flags 0); ENOSYS on kernels
// before 5.9.
func CloseRange(first, last int) syscall.Errno {
	_, e := Syscall6(unix.SYS_CLOSE_RANGE, uintptr(first), uintptr(last), 0, 0, 0, 0)
	return e
}

// FcntlInt is fcntl with an integer argument.
func FcntlInt(fd, cmd, arg int) (int, syscall.Errno) {
	return Syscall6(unix.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg), 0, 0, 0)
}

// GetsockoptInt reads an integer socket option.
func GetsockoptInt(fd, level, name int) (int, error) {
	return unix.GetsockoptInt(fd, level, name)
}

// Write writes b to fd, retrying on EINTR; for the library's own output (log lines).
func Write(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Write(fd, b)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// Result is a raw system call's outcome as the library returns it: the result, or -1 and the
// errno.
func Result(r uintptr, e syscall.Errno) (int, syscall.Errno) {
	if e != 0 {
		return -1, e
	}
	return int(r), 0
}

// GetsockoptTimeval reads a time socket option (SO_RCVTIMEO, SO_SNDTIMEO) in nanoseconds.
func GetsockoptTimeval(fd, level, name int) (int64, error) {
	tv, err := unix.GetsockoptTimeval(fd, level, name)
	if err != nil {
		return 0, err
	}
	return tv.Nano(), nil
}

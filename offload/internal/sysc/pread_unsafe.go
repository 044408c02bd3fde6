package sysc

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Invariant for this file: the buffer's address is converted with uintptr(unsafe.Pointer(...)) in
// the argument list of unix.Syscall6 itself, which keeps it alive and in place for the call.

// pread is pread(2) into b (not empty). Not unix.Pread: in race builds its race-detector hook
// moves b to the heap, and a crowd look's buffer must stay on its caller's stack (RunnableAt
// allocates nothing, which the race-enabled unit tests check).
func pread(fd int, b []byte, off int64) (int, syscall.Errno) {
	r, _, e := unix.Syscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
		uintptr(off), 0, 0)
	return Result(r, e)
}

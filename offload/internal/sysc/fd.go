package sysc

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// MaxFD is the number of fds the library serves: equal to GOXIO_FDT_SIZE in the shim.
const MaxFD = 1 << 20

// HighBase is the lowest number MoveHigh gives with a large fd limit: just above the Go runtime's
// netpoller pair (offload's netpollerMaxBase and +1), inside the fd table the shim grows at
// start-up while the process has one thread. Past it, a multi-threaded process waits for an RCU
// grace period (milliseconds) each time its fd table grows: with a limit of 20000, placing an
// internal fd at 19936 cost every engine start 5-20 ms.
const HighBase = 1<<12 - 62

// MoveHigh moves one of the library's own fds near the top of the fd limit, at most from
// HighBase (where the shim keeps internal fds), so that it does not take a number the program
// expects to get; it returns the new number (fd itself when it cannot move, or is there already).
func MoveHigh(fd int) int {
	if fd >= highBase() {
		return fd
	}
	nfd, err := DupHigh(fd)
	if err != nil {
		return fd
	}
	unix.Close(fd)
	return nfd
}

// DupHigh duplicates fd, close-on-exec, where MoveHigh places fds: one system call, for a
// blocking call's own reference to its socket (made at each sleep).
func DupHigh(fd int) (int, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, highBase())
	if err == unix.EINVAL {
		// The program lowered its fd limit below the base: look at it again.
		base.Store(0)
		nfd, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, highBase())
	}
	return nfd, err
}

// base caches highBase (0: not known).
var base atomic.Int64

// highBase is the lowest number MoveHigh gives: HighBase, or 64 below a smaller fd limit (1000
// when the limit cannot be read or is unusual). Read once: a raised limit keeps it valid, and
// DupHigh looks again when a lowered one refuses it.
func highBase() int {
	if b := base.Load(); b > 0 {
		return int(b)
	}
	var rl unix.Rlimit
	b := 1000
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 128 && rl.Cur < MaxFD {
		b = min(int(rl.Cur)-64, HighBase)
	}
	base.Store(int64(b))
	return b
}

package sysc

import "golang.org/x/sys/unix"

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
// expects to get; it returns the new number (fd itself when it cannot move).
func MoveHigh(fd int) int {
	var rl unix.Rlimit
	base := 1000
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 128 && rl.Cur < MaxFD {
		base = min(int(rl.Cur)-64, HighBase)
	}
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, base)
	if err != nil {
		return fd
	}
	unix.Close(fd)
	return nfd
}

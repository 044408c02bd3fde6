package sysc

import "golang.org/x/sys/unix"

// MaxFD is the number of fds the library serves: equal to GOXIO_FDT_SIZE in the shim.
const MaxFD = 1 << 20

// MoveHigh moves one of the library's own fds near the top of the fd limit (where the shim keeps
// internal fds), so that it does not take a number the program expects to get; it returns the
// new number (fd itself when it cannot move).
func MoveHigh(fd int) int {
	var rl unix.Rlimit
	base := 1000
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 128 && rl.Cur < MaxFD {
		base = int(rl.Cur) - 64
	}
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, base)
	if err != nil {
		return fd
	}
	unix.Close(fd)
	return nfd
}

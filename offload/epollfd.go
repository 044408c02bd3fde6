package offload

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// isEpoll reports whether fd is an epoll fd.
func isEpoll(fd int) bool {
	var buf [64]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	return err == nil && string(buf[:n]) == "anon_inode:[eventpoll]"
}

// AdoptInternal moves one of the library's own fds high and marks it internal in table (the
// program cannot see or close it); the shared-memory transport's doorbells use it.
func AdoptInternal(table FDTable, fd int) int {
	fd = moveHigh(fd)
	table.Set(fd, FlagInternal)
	return fd
}

// moveHigh moves one of the engine's own fds near the top of the fd limit (where the shim keeps
// internal fds), so that it does not take a number the program expects to get.
func moveHigh(fd int) int {
	var rl unix.Rlimit
	base := 1000
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur > 128 && rl.Cur < FDTableSize {
		base = int(rl.Cur) - 64
	}
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, base)
	if err != nil {
		return fd
	}
	unix.Close(fd)
	return nfd
}

package iomux

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

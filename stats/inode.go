package stats

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// socketInode is the kernel inode of the socket at fd in process pid, read from the
// /proc/PID/fd/FD link ("socket:[INODE]"); 0 when the fd is gone or is no socket. The library
// leaves a socket slot's inode 0 when it did not read it (an fstat per new socket is a system
// call on the path of a socket per request), and the reader fills it here.
func socketInode(pid, fd int) uint64 {
	if pid <= 0 || fd < 0 {
		return 0
	}
	var buf [64]byte
	n, err := unix.Readlink("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil {
		return 0
	}
	link := string(buf[:n])
	num, ok := strings.CutPrefix(link, "socket:[")
	if !ok || !strings.HasSuffix(num, "]") {
		return 0
	}
	ino, err := strconv.ParseUint(strings.TrimSuffix(num, "]"), 10, 64)
	if err != nil {
		return 0
	}
	return ino
}

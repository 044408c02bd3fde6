package shm

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// sweepStale removes the inbox and ring segments of this user's processes that died without
// closing them (SIGKILL, a crash, exec): files "goxio.<uid>.in.<pid>.<n>[...]" whose pid is gone.
// Run once when a process starts the transport; a live process's inboxes are never touched
// (a pid reused by an unrelated process keeps the dead one's files until that process exits).
// The directory is read with getdents(2), not os.ReadDir: an os.File would start the Go
// netpoller inside the program.
func sweepStale(dir string, uid int) int {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	prefix := "goxio." + strconv.Itoa(uid) + ".in."
	removed := 0
	buf := make([]byte, 32<<10)
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names[:0])
		for _, name := range names {
			rest, ok := strings.CutPrefix(name, prefix)
			if !ok {
				continue
			}
			pidStr, _, _ := strings.Cut(rest, ".")
			pid, err := strconv.Atoi(pidStr)
			if err != nil || pid <= 0 || unix.Kill(pid, 0) != unix.ESRCH {
				continue
			}
			if unix.Unlinkat(fd, name, 0) == nil {
				removed++
			}
		}
	}
	return removed
}

package stats

import (
	"bytes"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
)

// Process identity: a pid alone can be reused, so a segment also records the
// process start time (clock ticks after boot, field 22 of /proc/PID/stat),
// and a segment is live only while a process with that pid and that start
// time exists.

// parseStat returns the state letter and start time from the contents of /proc/PID/stat.
func parseStat(b []byte) (state byte, start uint64, err error) { return procstat.Parse(b) }

// readFileRaw reads up to max bytes of a small file with raw syscalls only
// (the writer may not use package os inside the host process).
func readFileRaw(path string, max int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 1024)
	for len(buf) < max {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	if len(buf) > max {
		buf = buf[:max]
	}
	return buf, nil
}

// selfStartTime returns this process's start time.
func selfStartTime() (uint64, error) { return procstat.SelfStart() }

// selfCmdline returns this process's argv with raw syscalls.
func selfCmdline() []string {
	b, err := readFileRaw("/proc/self/cmdline", 16<<10)
	if err != nil {
		return nil
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	var args []string
	for _, a := range bytes.Split(b, []byte{0}) {
		args = append(args, string(a))
	}
	return args
}

// ProcessAlive reports whether a process with this pid runs and, when start
// is not zero, started at that time (so a reused pid is not mistaken for the
// segment's owner). A zombie counts as gone.
func ProcessAlive(pid int, start uint64) bool { return procstat.Alive(pid, start) }

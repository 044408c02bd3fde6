package stats

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Process identity: a pid alone can be reused, so a segment also records the
// process start time (clock ticks after boot, field 22 of /proc/PID/stat),
// and a segment is live only while a process with that pid and that start
// time exists.

// parseStat returns the state letter and start time from the contents of
// /proc/PID/stat.
func parseStat(b []byte) (state byte, start uint64, err error) {
	// The command name (field 2) is in parentheses and may contain spaces
	// and parentheses: the fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, errors.New("parse /proc stat: no command field")
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, errors.New("parse /proc stat: too few fields")
	}
	start, err = strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc stat start time: %w", err)
	}
	return fields[0][0], start, nil
}

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

// selfStartTime returns this process's start time with raw syscalls.
func selfStartTime() (uint64, error) {
	b, err := readFileRaw("/proc/self/stat", 4096)
	if err != nil {
		return 0, err
	}
	_, start, err := parseStat(b)
	return start, err
}

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
func ProcessAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	b, err := readFileRaw("/proc/"+strconv.Itoa(pid)+"/stat", 4096)
	if err != nil {
		// EACCES and friends: the process exists but we may not look.
		return !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ESRCH)
	}
	state, got, err := parseStat(b)
	if err != nil {
		return true
	}
	if state == 'Z' || state == 'X' {
		return false
	}
	return start == 0 || got == start
}

package discovery

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Process identity: a pid alone can be reused, so every entry also records
// its owner's start time (clock ticks after boot, field 22 of
// /proc/PID/stat); an entry is live only while a process with that pid and
// that start time exists.

// parseStat returns the state letter and start time from the contents of
// /proc/PID/stat.
func parseStat(b []byte) (state byte, start uint64, err error) {
	// The command name (field 2) is in parentheses and may itself contain
	// spaces and parentheses: the fields after it follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
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

// readStat reads /proc/<pid>/stat (pid 0: /proc/self/stat) with raw
// syscalls into buf and returns the bytes read.
func readStat(pid int, buf []byte) ([]byte, error) {
	path := "/proc/self/stat"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], nil
}

// selfStartTime returns this process's start time.
func selfStartTime() (uint64, error) {
	var buf [1024]byte
	b, err := readStat(0, buf[:])
	if err != nil {
		return 0, err
	}
	_, start, err := parseStat(b)
	return start, err
}

// processAlive reports whether a process with this pid runs and, when start
// is not zero, started at that time (a reused pid is not the entry's owner).
// A zombie counts as gone. When /proc cannot tell (permission, unreadable
// format), the process counts as alive: an entry is never removed on doubt.
func processAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	var buf [1024]byte
	b, err := readStat(pid, buf[:])
	if err != nil {
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

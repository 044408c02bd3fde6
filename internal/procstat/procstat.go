// Package procstat tells processes apart by pid and start time: a pid alone can be reused, so the
// library's shared segments (statistics, discovery entries, rings, inboxes) record their owner's
// start time (clock ticks after boot, field 22 of /proc/PID/stat), and an owner is alive only while
// a process with that pid and that start time exists.
//
// It reads /proc with raw system calls: an os.File inside the program would start the Go
// runtime's netpoller.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxPID bounds the pids worth asking /proc about (PID_MAX_LIMIT is 4 Mi).
const maxPID = 1 << 22

// Parse returns the state letter and the start time from the contents of /proc/PID/stat.
func Parse(b []byte) (state byte, start uint64, err error) {
	// The command name (field 2) is in parentheses and may itself contain spaces and
	// parentheses: the fields after it follow the last ')'.
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

// Read reads /proc/<pid>/stat (pid 0: /proc/self/stat) into buf and returns the bytes read.
func Read(pid int, buf []byte) ([]byte, error) {
	path := "/proc/self/stat"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	return ReadPath(path, buf)
}

// ReadPath reads the file at path (a /proc file) into buf, up to its length, and returns the
// bytes read.
func ReadPath(path string, buf []byte) ([]byte, error) {
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

// SelfStart returns this process's start time.
func SelfStart() (uint64, error) {
	var buf [1024]byte
	b, err := Read(0, buf[:])
	if err != nil {
		return 0, err
	}
	_, start, err := Parse(b)
	return start, err
}

// Alive reports whether a process with this pid runs and, when start is not zero, started at that
// time (a reused pid is not the owner). A zombie counts as gone. When /proc cannot tell
// (permission, an unreadable format) the process counts as alive: what it owns is never removed
// on doubt.
func Alive(pid int, start uint64) bool {
	if pid <= 0 || pid > maxPID {
		return false
	}
	var buf [1024]byte
	b, err := Read(pid, buf[:])
	if err != nil {
		return !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ESRCH)
	}
	state, got, err := Parse(b)
	if err != nil {
		return true
	}
	if state == 'Z' || state == 'X' || state == 'x' {
		return false
	}
	return start == 0 || got == start
}

// ReadFile reads up to max bytes of a file (a /proc file: read until end of file) with raw system
// calls only: the library may not use package os inside the program's process.
func ReadFile(path string, max int) ([]byte, error) {
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

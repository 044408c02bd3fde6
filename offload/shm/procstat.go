package shm

import (
	"bytes"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Process identity: a pid alone can be reused, so slots and rings also record the process start
// time (clock ticks after boot, field 22 of /proc/PID/stat). A process is the sender of a ring
// only while a process with that pid and that start time exists.

// statStart returns the state letter and the start time from the contents of /proc/PID/stat.
func statStart(b []byte) (state byte, start uint64, ok bool) {
	// The command name (field 2) is in parentheses and may hold spaces and parentheses: the
	// fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	rest := b[i+1:]
	// rest is " S ppid ...": field 3 is the state, field 22 the start time.
	field := 2
	for len(rest) > 0 {
		for len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			j = len(rest)
		}
		f := bytes.TrimRight(rest[:j], "\n")
		rest = rest[j:]
		if len(f) == 0 {
			continue
		}
		field++
		switch field {
		case 3:
			if len(f) != 1 {
				return 0, 0, false
			}
			state = f[0]
		case 22:
			v, err := strconv.ParseUint(string(f), 10, 64)
			if err != nil {
				return 0, 0, false
			}
			return state, v, true
		}
	}
	return 0, 0, false
}

// readStat reads /proc/<pid>/stat ("self" when pid is 0) into buf with raw syscalls.
func readStat(pid int, buf []byte) ([]byte, error) {
	path := "/proc/self/stat"
	if pid != 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return buf[:n], nil
}

// self caches this process's identity; it is recomputed when the pid changed (a forked child
// that exec'd nothing never calls into Go, but tests and raw clones may).
var self atomic.Pointer[identity]

type identity struct {
	pid   int
	start uint64
}

// selfIdentity returns this process's pid and start time.
func selfIdentity() (int, uint64, error) {
	pid := unix.Getpid()
	if id := self.Load(); id != nil && id.pid == pid {
		return id.pid, id.start, nil
	}
	var buf [1024]byte
	b, err := readStat(0, buf[:])
	if err != nil {
		return 0, 0, err
	}
	_, start, ok := statStart(b)
	if !ok {
		return 0, 0, ErrCorrupt
	}
	self.Store(&identity{pid: pid, start: start})
	return pid, start, nil
}

// processAlive reports whether a process with this pid runs and, when start is not zero, started
// at that time (so a reused pid is not taken for the original). A zombie counts as gone. When
// /proc cannot tell (no permission, unreadable), the process counts as alive: a live sender
// must never lose its ring.
func processAlive(pid int, start uint64) bool {
	if pid <= 0 || pid > 1<<22 {
		return false
	}
	var buf [1024]byte
	b, err := readStat(pid, buf[:])
	if err != nil {
		return err != unix.ENOENT && err != unix.ESRCH
	}
	state, got, ok := statStart(b)
	if !ok {
		return true
	}
	if state == 'Z' || state == 'X' || state == 'x' {
		return false
	}
	return start == 0 || got == start
}

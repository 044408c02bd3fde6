package shm

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
)

// Process identity: a pid alone can be reused, so slots and rings also record the process start
// time. A process is the sender of a ring only while a process with that pid and that start time
// exists (internal/procstat).

// statStart returns the state letter and the start time from the contents of /proc/PID/stat.
func statStart(b []byte) (state byte, start uint64, ok bool) {
	state, start, err := procstat.Parse(b)
	return state, start, err == nil
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
	start, err := procstat.SelfStart()
	if err != nil {
		return 0, 0, ErrCorrupt
	}
	self.Store(&identity{pid: pid, start: start})
	return pid, start, nil
}

// processAlive reports whether a process with this pid runs and, when start is not zero, started
// at that time. When /proc cannot tell, the process counts as alive: a live sender must never
// lose its ring.
func processAlive(pid int, start uint64) bool { return procstat.Alive(pid, start) }

// processAliveRecent is processAlive answered from procstat's recent-answer cache: one kill(2)
// when the same process was found alive less than procstat.RecentTTL ago.
func processAliveRecent(pid int, start uint64) bool { return procstat.AliveRecent(pid, start) }

package procstat

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A process found alive (pid and start time, from /proc) a moment ago is checked again with
// kill(pid, 0) only, one system call instead of four: the look-ups that decide whether a datagram
// goes into a goxio socket's ring (the discovery directory, the dial of an inbox) ran Alive for
// every new socket of the same peer process (a UDP socket per request paid three /proc reads per
// round). kill(2) cannot tell a reused pid (RecentTTL bounds how long the start time read is
// trusted, far less than the kernel takes to hand a pid out again) nor a zombie: a process killed
// and not yet reaped by its parent is taken for alive for RecentTTL at most (it is dead for
// Alive, and for the checks that do not use this cache).

// RecentTTL is how long a process found alive stays alive for AliveRecent.
const RecentTTL = 20 * time.Millisecond

// KillTTL is how long a kill(2) that found the process stands: the calls within it take the
// answer without a system call. A socket per request to one goxio peer looked the peer up at
// every socket, a kill per request (tests/bench/churn.c: one system call in eight of the
// client's); a process that dies meanwhile is taken for alive KillTTL longer, far less than
// RecentTTL already allows a zombie, and a route to it found before its death is kept until its
// entries are swept anyway.
const KillTTL = time.Millisecond

// recentSize is how many processes the cache remembers (the peers a process talks to at once
// are few; the oldest entry makes room).
const recentSize = 16

var recent struct {
	mu   sync.Mutex
	ent  [recentSize]recentEntry
	next int
}

type recentEntry struct {
	pid    int
	start  uint64
	seen   time.Time // when Alive said yes
	killed time.Time // when kill(2) last found the process
}

// AliveRecent is Alive, answered from a small process-wide cache when Alive said yes for the
// same pid and start time (start not 0) less than RecentTTL ago.
func AliveRecent(pid int, start uint64) bool {
	if start == 0 {
		return Alive(pid, start)
	}
	now := time.Now()
	recent.mu.Lock()
	for i := range recent.ent {
		e := &recent.ent[i]
		if e.pid == pid && e.start == start && now.Sub(e.seen) < RecentTTL {
			if now.Sub(e.killed) < KillTTL {
				recent.mu.Unlock()
				return true
			}
			recent.mu.Unlock()
			if unix.Kill(pid, 0) != unix.ESRCH {
				recent.mu.Lock()
				if e.pid == pid && e.start == start { // the slot was not given to another meanwhile
					e.killed = now
				}
				recent.mu.Unlock()
				return true
			}
			return Alive(pid, start)
		}
	}
	recent.mu.Unlock()
	if !Alive(pid, start) {
		return false
	}
	recent.mu.Lock()
	slot := -1
	for i := range recent.ent {
		if recent.ent[i].pid == pid && recent.ent[i].start == start {
			slot = i
			break
		}
	}
	if slot < 0 {
		slot = recent.next
		recent.next = (recent.next + 1) % recentSize
	}
	recent.ent[slot] = recentEntry{pid: pid, start: start, seen: now, killed: now}
	recent.mu.Unlock()
	return true
}

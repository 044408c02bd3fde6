package discovery

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Entries of dead processes are removed by whoever notices first: Sweep
// scans the whole table, Lookup removes the dead owners among the entries it
// would have returned, Publish sweeps when the table is full.

// liveCache remembers liveness answers within one scan, so a process with
// many entries costs one read of /proc. recent: a process found alive by
// anybody in this process within procstat.RecentTTL counts as alive without a
// read (unicast look-ups, which run for every new socket; never sweeps).
type liveCache struct {
	d      *Dir
	recent bool
	n      int
	ent    [16]struct {
		pid   int
		start uint64
		alive bool
	}
}

// alive reports whether the owner pid with this start time runs.
func (c *liveCache) alive(pid int, start uint64) bool {
	if pid == c.d.pid && start == c.d.start {
		return true
	}
	for i := 0; i < c.n; i++ {
		if c.ent[i].pid == pid && c.ent[i].start == start {
			return c.ent[i].alive
		}
	}
	var a bool
	if c.recent {
		a = processAliveRecent(pid, start)
	} else {
		a = processAlive(pid, start)
	}
	if c.n < len(c.ent) {
		c.ent[c.n].pid, c.ent[c.n].start, c.ent[c.n].alive = pid, start, a
		c.n++
	}
	return a
}

// Sweep removes the entries of dead processes (pid gone, or running with
// another start time) and entries stuck half-written by a writer that no
// longer exists; it returns how many it removed.
func (d *Dir) Sweep() int {
	if d == nil || d.closed.Load() {
		return 0
	}
	c := liveCache{d: d}
	n := 0
	var w [entryWords]uint64
	budget := scanBudget
	for i, hi := 0, d.high(); i < hi; i++ {
		switch readEntry(d.slot(i), &w, &budget) {
		case readOK:
			if !c.alive(int(uint32(w[eOwner])), w[eStart]) && d.removeDead(i, &w) {
				n++
			}
		case readBusy:
			if d.recoverStuck(i, w[eLock], &c) {
				n++
			}
		}
	}
	return n
}

// removeDead frees slot i if it still holds exactly the copy w (read at the
// even lock value w[eLock]) of a dead owner's entry.
func (d *Dir) removeDead(i int, w *[entryWords]uint64) bool {
	s := d.slot(i)
	held, ok := tryLock(s, w[eLock], d.pid)
	if !ok {
		return false // changed since: someone else swept or updated it
	}
	clearEntry(s)
	unlock(s, held)
	d.lowerHigh()
	d.bumpGen()
	return true
}

// recoverStuck frees slot i when its lock has stayed odd at l and the
// holder is gone: the holder pid does not exist, or it is the entry's owner
// pid but runs with another start time (the owner died and the pid was
// reused). A live holder keeps its lock: at worst the slot leaks until that
// pid exits.
func (d *Dir) recoverStuck(i int, l uint64, c *liveCache) bool {
	s := d.slot(i)
	holder := lockHolder(l)
	owner := int(uint32(atomic.LoadUint64(&s[eOwner])))
	start := atomic.LoadUint64(&s[eStart])
	dead := holder == 0 || !c.alive(holder, 0) ||
		holder == owner && start != 0 && !c.alive(owner, start)
	if !dead {
		return false
	}
	held, ok := steal(s, l, d.pid)
	if !ok {
		return false
	}
	clearEntry(s)
	unlock(s, held)
	d.lowerHigh()
	d.bumpGen()
	return true
}

// SweepDir removes the entries of dead processes from the directory segment of uid and netns in
// dir, if there is one (it is not created): every engine runs it when it starts, so that a
// process that died without withdrawing its entries (killed, _exit, or one that never loaded its
// engine and published its listeners from C) leaves nothing a connecting process would trust.
// It returns how many entries it removed.
func SweepDir(dir string, uid int, netns uint64) (int, error) {
	start, err := selfStartTime()
	if err != nil {
		return 0, fmt.Errorf("sweep discovery segment: %w", err)
	}
	path := dir + "/" + FileName(uid, netns)
	mem, err := openExisting(path)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep discovery segment: %w", err)
	}
	d := &Dir{path: path, mem: mem, entries: Entries, pid: unix.Getpid(), start: start}
	defer d.Close()
	return d.Sweep(), nil
}

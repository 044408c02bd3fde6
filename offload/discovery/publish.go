package discovery

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Handle is a published entry. Its methods are safe for concurrent use; on
// the zero Handle, on a withdrawn entry, and on an entry that was swept (its
// process was taken for dead) they do nothing.
type Handle struct {
	d     *Dir
	slot  int
	claim uint64
}

// self returns the pid and start time entries are published under,
// re-reading them when the pid changed (a forked child).
func (d *Dir) self() (int, uint64, error) {
	pid := unix.Getpid()
	if pid == d.pid {
		return pid, d.start, nil
	}
	start, err := selfStartTime()
	return pid, start, err
}

// Publish adds e to the table under this process's pid and start time (e.PID
// is ignored) and returns its handle. ErrDirFull when every entry belongs to
// a live process (entries of dead processes are swept first), ErrInvalid
// (wrapped) for an entry that cannot be published.
func (d *Dir) Publish(e Entry) (Handle, error) {
	if d == nil || d.closed.Load() {
		return Handle{}, fmt.Errorf("publish: %w", ErrClosed)
	}
	e, err := normalize(e)
	if err != nil {
		return Handle{}, fmt.Errorf("publish: %w", err)
	}
	pid, start, err := d.self()
	if err != nil {
		return Handle{}, fmt.Errorf("publish: %w", err)
	}
	for pass := 0; pass < 2; pass++ {
		if h, ok := d.claim(e, pid, start); ok {
			return h, nil
		}
		if pass == 0 && d.Sweep() == 0 {
			break
		}
	}
	return Handle{}, fmt.Errorf("publish %s: %w (%d entries)", e.Inbox, ErrDirFull, d.entries)
}

// claim takes a free slot and writes e into it: the lowest one from the hint on (then the ones
// below it), so the table's high-water mark, up to which every lookup scans, stays near the
// number of entries published at once however many sockets came and went (a rotating hint
// walked it up to the whole table under socket churn: ~10 µs per lookup).
func (d *Dir) claim(e Entry, pid int, start uint64) (Handle, bool) {
	n := d.entries
	first := int(d.hint.Load()) % n
	for k := 0; k < n; k++ {
		i := (first + k) % n
		s := d.slot(i)
		l := atomic.LoadUint64(&s[eLock])
		if lockSeq(l)&1 != 0 || uint32(atomic.LoadUint64(&s[eOwner])) != 0 {
			continue
		}
		held, ok := tryLock(s, l, pid)
		if !ok {
			continue
		}
		if uint32(atomic.LoadUint64(&s[eOwner])) != 0 {
			// Claimed and released by someone else between our loads.
			unlock(s, held)
			continue
		}
		claim := atomic.AddUint64(&d.mem[hClaim], 1)
		var w [entryWords]uint64
		encode(&w, e, pid, start, claim)
		writeEntry(s, &w)
		unlock(s, held)
		d.raiseHigh(i + 1)
		// The slots below i were taken when we passed them; a withdrawal meanwhile lowered
		// the hint below first, and that lower hint stays.
		d.hint.CompareAndSwap(uint32(first), uint32(i+1))
		d.bumpGen()
		return Handle{d: d, slot: i, claim: claim}, true
	}
	return Handle{}, false
}

// raiseHigh makes the high-water mark at least n.
func (d *Dir) raiseHigh(n int) {
	for {
		h := atomic.LoadUint64(&d.mem[hHigh])
		if h >= uint64(n) || atomic.CompareAndSwapUint64(&d.mem[hHigh], h, uint64(n)) {
			return
		}
	}
}

// own takes the lock of h's slot and checks the slot still holds h's entry;
// the caller unlocks.
func (h Handle) own() (s []uint64, held uint64, pid int, start uint64, ok bool) {
	d := h.d
	if d == nil || d.closed.Load() {
		return nil, 0, 0, 0, false
	}
	pid, start, err := d.self()
	if err != nil {
		return nil, 0, 0, 0, false
	}
	s = d.slot(h.slot)
	held, ok = lock(s, pid)
	if !ok {
		return nil, 0, 0, 0, false
	}
	if uint32(atomic.LoadUint64(&s[eOwner])) != uint32(pid) ||
		atomic.LoadUint64(&s[eStart]) != start ||
		atomic.LoadUint64(&s[eClaim]) != h.claim {
		unlock(s, held)
		return nil, 0, 0, 0, false
	}
	return s, held, pid, start, true
}

// Update replaces the published entry with e (after a connect, a change of
// options). An entry Publish would reject leaves the published one as it
// was.
func (h Handle) Update(e Entry) {
	e, err := normalize(e)
	if err != nil {
		return
	}
	s, held, pid, start, ok := h.own()
	if !ok {
		return
	}
	var w [entryWords]uint64
	encode(&w, e, pid, start, h.claim)
	writeEntry(s, &w)
	unlock(s, held)
	h.d.bumpGen()
}

// Withdraw removes the entry from the table.
func (h Handle) Withdraw() {
	s, held, _, _, ok := h.own()
	if !ok {
		return
	}
	clearEntry(s)
	unlock(s, held)
	h.d.lowerHint(h.slot)
	h.d.lowerHigh()
	h.d.bumpGen()
}

// lowerHint makes a freed slot the next place Publish looks, when it is below the hint.
func (d *Dir) lowerHint(slot int) {
	for {
		h := d.hint.Load()
		if uint32(slot) >= h || d.hint.CompareAndSwap(h, uint32(slot)) {
			return
		}
	}
}

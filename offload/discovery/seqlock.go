package discovery

import (
	"sync/atomic"

	"github.com/goxio/goxio/internal/seqlock"
)

// Seqlock per entry (internal/seqlock): the lock word eLock holds the pid of the process
// writing the entry (high 32 bits) and a sequence that is odd while a write is in progress.
// Writers take it with a compare-and-swap from an even value, so two writers (the owner and a
// process sweeping a dead owner's entry) never overlap; readers copy the entry between two
// equal, even reads of the lock word and never write.
//
// A process killed while writing leaves the sequence odd for good. Readers give up on such an
// entry after readTries (it is skipped, never waited for), and Sweep takes the lock over from a
// holder that no longer exists.

const (
	// readTries bounds the attempts to read one entry: a write is a few
	// dozen stores, so this is generous for a live writer that was preempted
	// and bounds the cost of an entry stuck odd to tens of microseconds.
	readTries = 2000
	// scanBudget bounds the tries of one whole scan, so a table full of
	// entries stuck odd (crashed or malicious writers) costs a bounded time
	// per Lookup; every entry still gets two tries.
	scanBudget = 100000
	// lockTries bounds the attempts of a writer to take an entry's lock
	// (held only by a sweeper for a few dozen stores, or stuck odd by a
	// dead holder until the next Sweep).
	lockTries = 100000
)

// lockSeq returns the sequence part of a lock word.
func lockSeq(l uint64) uint32 { return seqlock.Seq(l) }

// lockHolder returns the pid part of a lock word.
func lockHolder(l uint64) int { return seqlock.Holder(l) }

// readResult tells what readEntry found.
type readResult int

const (
	readOK   readResult = iota // a consistent copy
	readFree                   // the slot holds no entry
	readBusy                   // no consistent copy within readTries (being written or stuck)
)

// readEntry copies slot e into dst under its seqlock, spending at most
// readTries tries and at least two from *budget (nil: no budget). The lock
// word is left in dst[eLock] (the last one seen when busy).
func readEntry(e []uint64, dst *[entryWords]uint64, budget *int) readResult {
	r := seqlock.Reader{Tries: readTries, Budget: readTries}
	if budget != nil {
		r.Budget = *budget
	}
	ok := r.Read(e, dst[:])
	if budget != nil {
		*budget = r.Budget
	}
	switch {
	case !ok:
		return readBusy
	case uint32(dst[eOwner]) == 0:
		return readFree
	}
	return readOK
}

// tryLock takes the lock of slot e from the even value l for pid; it
// returns the odd value now held.
func tryLock(e []uint64, l uint64, pid int) (uint64, bool) { return seqlock.TryLock(&e[eLock], l, pid) }

// lock takes the lock of slot e for pid, waiting a bounded time for another
// writer; false when the lock stayed held.
func lock(e []uint64, pid int) (uint64, bool) { return seqlock.Lock(&e[eLock], pid, lockTries) }

// unlock publishes the writes made under the held lock value.
func unlock(e []uint64, held uint64) { seqlock.Unlock(&e[eLock], held) }

// steal takes over a lock stuck at the odd value l (its holder is dead) for
// pid: the sequence stays odd but changes, so only one process succeeds.
func steal(e []uint64, l uint64, pid int) (uint64, bool) { return seqlock.Steal(&e[eLock], l, pid) }

// clearEntry zeroes every word of slot e but the lock (the slot becomes
// free). The caller holds the lock.
func clearEntry(e []uint64) {
	// The owner word first: a free slot is recognised by it.
	atomic.StoreUint64(&e[eOwner], 0)
	for i := eStart; i < entryWords; i++ {
		atomic.StoreUint64(&e[i], 0)
	}
}

// writeEntry stores the words 1.. of w into slot e, owner word last, so a
// racy peek at the owner word (Publish's free-slot scan) never sees an owner
// before the rest. The caller holds the lock.
func writeEntry(e []uint64, w *[entryWords]uint64) {
	for i := eStart; i < entryWords; i++ {
		atomic.StoreUint64(&e[i], w[i])
	}
	atomic.StoreUint64(&e[eOwner], w[eOwner])
}

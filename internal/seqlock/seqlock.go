// Package seqlock is the sequence lock of the library's shared segments (statistics slots,
// discovery entries): a lock word in front of a block of 64-bit words in shared memory. Its low
// 32 bits are a sequence, odd while a write is in progress; the high 32 bits may name the
// process that holds it (Lock, Steal) or stay 0 (Begin, End). Readers copy the block between two
// equal, even reads of the lock word and never write, so they never block a writer; a block whose
// writer died mid-write stays odd, and readers give up on it after a bounded number of tries.
//
// Two kinds of writers: writers serialized by other means (a mutex of the one process that
// owns the block) use Begin and End; writers of several processes that may compete (an owner
// and a process sweeping a dead owner's entry) take the lock with a compare-and-swap (Lock,
// TryLock) and take over one left odd by a dead holder with Steal.
package seqlock

import (
	"runtime"
	"sync/atomic"
)

// Seq returns the sequence part of a lock word.
func Seq(l uint64) uint32 { return uint32(l) }

// Holder returns the process part of a lock word (0 for Begin/End writers).
func Holder(l uint64) int { return int(l >> 32) }

// Begin makes the sequence odd (a write starts); writers are serialized by the caller.
func Begin(lock *uint64) { atomic.AddUint64(lock, 1) }

// End makes the sequence even again, publishing the write.
func End(lock *uint64) { atomic.AddUint64(lock, 1) }

// TryLock takes the lock from the even value l for pid; it returns the odd value now held.
func TryLock(lock *uint64, l uint64, pid int) (uint64, bool) {
	if Seq(l)&1 != 0 {
		return 0, false
	}
	held := uint64(uint32(pid))<<32 | uint64(Seq(l)+1)
	return held, atomic.CompareAndSwapUint64(lock, l, held)
}

// Lock takes the lock for pid, trying at most tries times (yielding the processor now and
// then) while another writer holds it; false when it stayed held.
func Lock(lock *uint64, pid, tries int) (uint64, bool) {
	for try := 0; try < tries; try++ {
		if held, ok := TryLock(lock, atomic.LoadUint64(lock), pid); ok {
			return held, true
		}
		if try%64 == 63 {
			runtime.Gosched()
		}
	}
	return 0, false
}

// Unlock publishes the writes made under the held lock value (from TryLock, Lock or Steal).
func Unlock(lock *uint64, held uint64) {
	atomic.StoreUint64(lock, uint64(Seq(held)+1))
}

// Steal takes over a lock stuck at the odd value l (its holder is gone) for pid: the sequence
// stays odd but changes, so only one process succeeds.
func Steal(lock *uint64, l uint64, pid int) (uint64, bool) {
	if Seq(l)&1 == 0 {
		return 0, false
	}
	held := uint64(uint32(pid))<<32 | uint64(Seq(l)+2)
	return held, atomic.CompareAndSwapUint64(lock, l, held)
}

// Reader copies blocks under their locks within a budget of tries shared by a whole scan, so
// that a segment whose every block is stuck odd (a crashed or malicious writer) costs a bounded
// time.
type Reader struct {
	// Tries bounds the tries for one block; every block gets at least two whatever the budget.
	Tries int
	// Budget is what is left of the scan's tries; it goes below zero at most by two per block.
	Budget int
}

// Read copies block[1:] into dst[1:] (dst at least as long as block; block[0] is the lock word)
// between two equal, even reads of the lock word, and stores that word in dst[0]. false when no
// consistent copy was possible within the tries: dst[0] is then the last lock word seen (odd
// when a writer held it).
func (r *Reader) Read(block, dst []uint64) bool {
	dst = dst[:len(block)]
	tries := max(min(r.Tries, r.Budget), 2)
	for try := 0; try < tries; try++ {
		r.Budget--
		l1 := atomic.LoadUint64(&block[0])
		dst[0] = l1
		if Seq(l1)&1 != 0 {
			if try%64 == 63 {
				runtime.Gosched()
			}
			continue
		}
		for i := 1; i < len(block); i++ {
			dst[i] = atomic.LoadUint64(&block[i])
		}
		if atomic.LoadUint64(&block[0]) == l1 {
			return true
		}
	}
	return false
}

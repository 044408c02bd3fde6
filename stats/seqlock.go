package stats

import (
	"runtime"
	"sync/atomic"
)

// Seqlock on a slot's first word. Writers are serialized by the Writer's
// mutex; readers never block the writer.

// beginWrite makes the sequence odd: readers that overlap will retry.
func beginWrite(seq *uint64) { atomic.AddUint64(seq, 1) }

// endWrite makes the sequence even again, publishing the change.
func endWrite(seq *uint64) { atomic.AddUint64(seq, 1) }

// readTries bounds how long a reader waits for one slot. A writer holds the
// seqlock for a few dozen stores; a slot that stays odd belongs to a process
// that died while writing it and is reported as busy instead of hanging.
const readTries = 10000

// readBudget bounds the retries of one whole snapshot, so that a segment
// whose every slot is stuck (a crashed or malicious writer) costs
// milliseconds, not minutes.
const readBudget = 200000

// slotReader copies slots under their seqlocks within a retry budget.
type slotReader struct {
	budget int
}

func newSlotReader() *slotReader { return &slotReader{budget: readBudget} }

// read copies src into dst (dst at least as long) between two equal, even
// reads of src[0]. It returns false when no consistent copy was possible
// within readTries (and the remaining budget; every slot gets two tries).
func (r *slotReader) read(src, dst []uint64) bool {
	dst = dst[:len(src)]
	tries := max(min(readTries, r.budget), 2)
	for try := 0; try < tries; try++ {
		r.budget--
		s1 := atomic.LoadUint64(&src[0])
		if s1&1 != 0 {
			if try%64 == 63 {
				runtime.Gosched()
			}
			continue
		}
		for i := 1; i < len(src); i++ {
			dst[i] = atomic.LoadUint64(&src[i])
		}
		if atomic.LoadUint64(&src[0]) == s1 {
			dst[0] = s1
			return true
		}
	}
	return false
}

package discovery

import "sync/atomic"

// The high-water mark (hHigh) bounds every scan: lookups read the slots below it only. Publish
// raises it; a withdrawal or a sweep that frees the topmost slots lowers it again (lowerHigh), so
// a directory that once held many entries (or outlived a network namespace whose number the
// kernel gave out again: the file stays in /dev/shm) does not make every later lookup read all
// 4096 slots.
//
// Lowering races with a Publish into the slots it gives up: the claimer writes the slot, then
// raises the mark (a no-op while the old mark is above it). lowerHigh lowers the mark with a
// compare-and-swap, then reads those slots again and raises the mark over any that is taken or
// being written; with sequentially consistent atomics either the claimer's raise sees the lower
// mark or the re-read sees the claimer's slot. A lookup between the two can miss an entry
// published in the same microseconds: it then counts as made before that publish, and the
// generation is bumped after the repair, so a route cached from it is looked up again.

// slotFree reports whether slot i is free and nobody is writing it.
func (d *Dir) slotFree(i int) bool {
	s := d.slot(i)
	return lockSeq(atomic.LoadUint64(&s[eLock]))&1 == 0 && uint32(atomic.LoadUint64(&s[eOwner])) == 0
}

// lowerHigh moves the high-water mark down over the free slots at the top of the table.
func (d *Dir) lowerHigh() {
	for {
		h := atomic.LoadUint64(&d.mem[hHigh])
		n := int(min(h, uint64(d.entries)))
		i := n
		for i > 0 && d.slotFree(i-1) {
			i--
		}
		if i == n {
			return
		}
		if !atomic.CompareAndSwapUint64(&d.mem[hHigh], h, uint64(i)) {
			continue // moved meanwhile: look again
		}
		for j := n - 1; j >= i; j-- {
			if !d.slotFree(j) {
				d.raiseHigh(j + 1)
				d.bumpGen()
				break
			}
		}
		return
	}
}

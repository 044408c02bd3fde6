package shm

import (
	"slices"
	"sync/atomic"

	"github.com/goxio/goxio/internal/shmseg"
)

// Held records: VMA's recvfrom_zcopy hands the program a datagram where it lies in the ring, and
// the record stays there until the program frees it.
//
// The consumer's private head (ring.head) moves past a held record as past a popped one, so the
// next Peek finds the next datagram; the head the producer sees (*headp) moves only over the
// freed prefix: it stays at the position of the oldest record still held. A ring whose records
// the program holds therefore fills up, and its sender meets what a full receive buffer gives it
// (a drop counted, or EAGAIN): back-pressure. Records freed out of order are kept as freed until
// every older one is freed too.
//
// A ring with held records is never unmapped: a ring whose sender closed or died is detached only
// once its last held record is freed (Refresh), and one detached for corruption is kept mapped
// (zombies) until then. Close releases every held record with the inbox: the socket is gone.
//
// Handles are numbers, not addresses: a slot of the inbox's hold table and the slot's
// generation, so a freed, foreign or made-up handle is recognised without touching the ring.

// heldRec is one record of a ring in the hold queue: held from pos (the consumer's head when it
// was taken, padding before it included) to next.
type heldRec struct {
	pos, next uint64
	freed     bool
}

// holdGen numbers the holds of every inbox of the process, in blocks an inbox takes (nextGen): a
// handle of one socket's inbox never names a record of another's (until 2^32 holds later).
var holdGen atomic.Uint32

// holdEntry is one slot of the inbox's hold table.
type holdEntry struct {
	r    *ring
	pos  uint64
	gen  uint32
	used bool
	next int32 // next free slot, -1 at the end
}

// Hold consumes what the last Peek returned, as Pop does, but keeps the record in the ring until
// Release(handle): the producer cannot reuse its space meanwhile, and the payload Peek returned
// stays valid and unchanged. A consumer method. ErrEmpty when the last Peek returned nothing.
func (in *Inbox) Hold() (handle uint64, err error) {
	handle, err = in.hold()
	if err == nil {
		in.pressure()
	}
	return handle, err
}

// hold is Hold without the look at the rings' pressure, which a caller holding many records at
// once (Queue's) makes once at the end (QueueEnd).
func (in *Inbox) hold() (handle uint64, err error) {
	if in.bx.peeked {
		return in.boxDone(), nil // held already, since Queue
	}
	r := in.peekRing
	if r == nil {
		return 0, ErrEmpty
	}
	pos := r.head.Load()
	r.hold(pos, in.peekNext)
	in.peekRing = nil
	in.cur = in.peekIdx + 1
	i := in.holdFree
	if i < 0 {
		i = int32(len(in.holdTab))
		in.holdTab = append(in.holdTab, holdEntry{next: -1})
	}
	e := &in.holdTab[i]
	in.holdFree = e.next
	e.r, e.pos, e.used, e.next = r, pos, true, -1
	e.gen = in.nextGen()
	in.heldNow++
	return uint64(e.gen)<<32 | uint64(i+1), nil
}

// Release frees the held record named by handle: the producer's head moves over every record
// freed from the oldest on. ErrNotHeld for a handle that names no record held now; a consumer
// method.
func (in *Inbox) Release(handle uint64) error {
	err := in.release(handle)
	if err == nil {
		in.pressure()
	}
	return err
}

// release is Release without the look at the pressure, and with the producer's head shown at
// once unless the ring defers it (Fold: one store of each ring's head for many frees).
func (in *Inbox) release(handle uint64) error {
	i := int64(handle&0xffffffff) - 1
	if in.closed.Load() || i < 0 || i >= int64(len(in.holdTab)) {
		return ErrNotHeld
	}
	e := &in.holdTab[i]
	if !e.used || e.gen != uint32(handle>>32) {
		return ErrNotHeld
	}
	if !e.r.release(e.pos) {
		return ErrNotHeld // not in its ring's queue: cannot happen with a valid entry
	}
	r := e.r
	e.r, e.used = nil, false
	e.next = in.holdFree
	in.holdFree = int32(i)
	in.heldNow--
	switch {
	case len(r.holds) != 0:
	case r.zombie:
		r.flushShow()
		// Detached while held: its mapping goes with its last held record.
		in.zombies = slices.DeleteFunc(in.zombies, func(z *ring) bool { return z == r })
		in.letGo(r)
		in.retired = append(in.retired, r.mem)
		in.publish()
	case r.lingering && !r.published():
		// Its sender closed or died and only held records kept it: it goes now.
		r.flushShow()
		in.detach(r)
		in.publish()
	}
	return nil
}

// holdGenBlock is how many hold numbers an inbox takes from holdGen at once: one locked addition
// per block, not per held record.
const holdGenBlock = 256

// nextGen returns a hold number no other hold of the process has now (never 0).
func (in *Inbox) nextGen() uint32 {
	for {
		if in.genNext == in.genEnd {
			in.genEnd = holdGen.Add(holdGenBlock)
			in.genNext = in.genEnd - holdGenBlock
		}
		g := in.genNext
		in.genNext++
		if g != 0 {
			return g
		}
	}
}

// heldRing is the ring of the record handle names, nil for none held.
func (in *Inbox) heldRing(handle uint64) *ring {
	i := int64(handle&0xffffffff) - 1
	if i < 0 || i >= int64(len(in.holdTab)) {
		return nil
	}
	if e := &in.holdTab[i]; e.used && e.gen == uint32(handle>>32) {
		return e.r
	}
	return nil
}

// HeldNow returns how many records the program holds (a consumer method).
func (in *Inbox) HeldNow() int { return in.heldNow }

// hold records the record at pos..next as held and moves the consumer's private head past it.
// Holds are taken at the head, so the queue stays sorted by position.
func (r *ring) hold(pos, next uint64) {
	// Frees move the start of holds along its array: back to the array's start before an append
	// would make a new one (a held stream of datagrams would allocate all the time).
	if len(r.holds) == cap(r.holds) && cap(r.holdArr) > 2*len(r.holds) {
		r.holds = r.holdArr[:copy(r.holdArr[:cap(r.holdArr)], r.holds)]
	}
	r.holds = append(r.holds, heldRec{pos: pos, next: next})
	if cap(r.holds) > cap(r.holdArr) {
		r.holdArr = r.holds[:0]
	}
	r.head.Store(next)
	r.popped++
}

// release marks the held record at pos freed and moves the producer's head over the freed
// prefix: to the oldest record still held, or to the consumer's head when none is. false when no
// record at pos is held.
func (r *ring) release(pos uint64) bool {
	if len(r.holds) > 0 && r.holds[0].pos == pos && !r.holds[0].freed {
		return r.releaseAt(0) // the oldest: a program that frees in order
	}
	i, found := slices.BinarySearchFunc(r.holds, pos, func(h heldRec, p uint64) int {
		switch {
		case h.pos < p:
			return -1
		case h.pos > p:
			return 1
		}
		return 0
	})
	if !found || r.holds[i].freed {
		return false
	}
	return r.releaseAt(i)
}

// releaseAt marks the held record holds[i] freed and moves the producer's head over the freed
// prefix.
func (r *ring) releaseAt(i int) bool {
	r.holds[i].freed = true
	k := 0
	for k < len(r.holds) && r.holds[k].freed {
		k++
	}
	if k == 0 {
		return true
	}
	h := r.head.Load()
	if k == len(r.holds) {
		r.holds = r.holdArr[:0] // keeps its array: no allocation per held datagram
	} else {
		r.holds = r.holds[k:]
		h = r.holds[0].pos
	}
	if r.deferShow {
		r.showWant, r.showDue = h, true
	} else {
		r.show(h)
	}
	return true
}

// flushShow shows the head a deferred release left to show (deferShow).
func (r *ring) flushShow() {
	if r.showDue {
		r.showDue = false
		r.show(r.showWant)
	}
}

// closeHolds forgets every held record (Close): the table is dropped and the zombies unmapped.
func (in *Inbox) closeHolds(keep func(error)) {
	in.closeBox()
	for _, z := range in.zombies {
		in.letGo(z)
		keep(shmseg.Unmap(z.mem))
	}
	in.zombies, in.holdTab, in.holdFree, in.heldNow = nil, nil, -1, 0
}

package shm

import "sync/atomic"

// The box: VMA's recvfrom_zcopy and free_packets, and the plain receives (read, recv, recvfrom),
// without entering the engine per datagram (struct goxio_zbox in shim/goxio.h, the preload
// library's side in box.c and vma_records.c).
//
// The preload library owns one box per fd and hands it to the engine with a zero-copy or a plain
// receive; UseBox attaches it to the inbox. Queue then holds datagrams that wait in the rings after the one
// the receive hands over, as Hold does, and puts them in the box, where the library takes them
// (oldest first) without entering the engine. They are held like any handed-over record: the
// producer sees their space taken (back-pressure) and the ring stays mapped.
//
// The inbox's own receives take queued records before the rings (Peek), so a program that mixes
// recvfrom_zcopy with recv, poll or epoll sees its datagrams in order and its socket readable while
// records are queued (Pending). The record Peek returned from the box (the front) is out of the
// box while the engine has it, and the box's front word keeps the library from taking a younger
// one meanwhile. When the fd stops naming the socket (Unbox) the queued records stay with the
// inbox, served by Peek before the rings; Close detaches the box first, under its lock (a plain
// receive of the library copies a queued record out of its ring under that lock: it is done
// before the ring is unmapped), and forgets the queued records with every held record.
//
// free_packets leaves the tokens of freed ring records in the box's freed array; Fold releases
// them at the inbox's next Peek or Release. Deferred frees keep ring space from the producer
// until then, so the box's urgent word asks the library to enter the engine at once whenever a
// ring is more than half held or its sender is gone (pressure): a sender that needs the space,
// and a ring file that goes with its last free, get it when the program frees, as before.

// boxState is the inbox's side of its box; consumer state unless said otherwise.
type boxState struct {
	mem    atomic.Pointer[boxMem] // the attached box (Pending reads it), nil: none
	fd     int                    // the fd the box belongs to
	urgent bool                   // the urgent word's value
	ents   [BoxEntries]queued     // the queued records, at the index the box has them
	// Records queued when the box went (Unbox): served before the rings.
	pHead  int
	pCount atomic.Int32
	// The front: the oldest queued record, out of the box while the engine has it.
	front    atomic.Bool // read by Pending
	frontIdx int
	peeked   bool // the last Peek returned the front
	// A run of Queue calls holds the box's lock from QueueBegin to QueueEnd; count is the box's
	// count as the run made it, stored for the library at QueueEnd.
	run struct {
		m     *boxMem
		count uint32
	}
}

// queued is one record in the box: the hold's token, its ring, its source name and payload.
type queued struct {
	token uint64
	r     *ring
	name  [MaxName]byte
	nlen  int
	data  []byte
}

// UseBox attaches the box at p, the preload library's for fd, to the inbox and returns its epoch;
// 0 when the inbox uses another fd's box, still serves records of a box it had, or is closed (the
// call then hands its datagram over without the box). A consumer method.
func (in *Inbox) UseBox(p uintptr, fd int) uint32 {
	b := &in.bx
	if p == 0 || in.closed.Load() {
		return 0
	}
	m := boxAt(p)
	if cur := b.mem.Load(); cur != nil {
		if cur != m || b.fd != fd {
			return 0
		}
		return atomic.LoadUint32(&m.epoch)
	}
	if b.pCount.Load() > 0 || b.front.Load() {
		return 0
	}
	m.acquire()
	defer m.release()
	if atomic.LoadUint32(&m.attached) != 0 {
		return 0 // another socket's: it is detached before its fd can name another socket
	}
	m.epoch++
	if m.epoch == 0 {
		m.epoch = 1
	}
	atomic.StoreUint32(&m.urgent, b2u(b.urgent))
	m.resetLocked(1)
	b.mem.Store(m)
	b.fd = fd
	return m.epoch
}

// Queue holds the datagram the last Peek returned from a ring (name and data as Peek returned
// them) and queues it in the box, within a run (QueueBegin .. QueueEnd); false, and nothing done,
// outside a run, when the box is full, or the last Peek returned no ring's record. A consumer
// method.
func (in *Inbox) Queue(name, data []byte) bool {
	b := &in.bx
	m := b.run.m
	if m == nil || in.peekRing == nil || b.peeked || len(name) > MaxName || b.run.count >= BoxEntries {
		return false
	}
	r := in.peekRing
	tok, err := in.hold()
	if err != nil {
		return false
	}
	// Only the engine adds, and the run holds the lock: the count is the run's.
	i := (m.head + b.run.count) % BoxEntries
	q := &b.ents[i]
	q.token, q.r, q.data = tok, r, data
	q.nlen = copy(q.name[:], name)
	c := &m.ent[i]
	c.token, c.data, c.len, c.namelen = tok, Addr(data), uint32(len(data)), uint32(len(name))
	copy(c.name[:], name)
	b.run.count++
	return true
}

// QueueBegin starts a run of Queue calls: it takes the box's lock until QueueEnd (the library's
// receives wait meanwhile; the engine takes nothing else of the box's under it). false when no
// box is attached: Queue then queues nothing. A consumer method.
func (in *Inbox) QueueBegin() bool {
	b := &in.bx
	m := b.mem.Load()
	if m == nil {
		return false
	}
	m.acquire()
	b.run.m, b.run.count = m, m.count
	return true
}

// QueueEnd ends a run of Queue calls: the library sees the records queued, and the rings'
// pressure is looked at once for all of them. It returns how many records the program holds
// now. A consumer method.
func (in *Inbox) QueueEnd() int {
	b := &in.bx
	if m := b.run.m; m != nil {
		atomic.StoreUint32(&m.count, b.run.count)
		m.release()
		b.run.m = nil
	}
	in.pressure()
	return in.heldNow
}

// PeekedQueued reports whether the record the last Peek returned is one Queue put in the box
// (counted as received when it was queued). A consumer method.
func (in *Inbox) PeekedQueued() bool { return in.bx.peeked }

// BoxQueued reports whether records wait in the box or with the inbox (safe from any goroutine).
func (in *Inbox) BoxQueued() bool {
	b := &in.bx
	if b.front.Load() || b.pCount.Load() > 0 {
		return true
	}
	m := b.mem.Load()
	return m != nil && atomic.LoadUint32(&m.count) > 0
}

// boxPeek is Peek's first step: the front, taken out of the box if the engine does not have it.
func (in *Inbox) boxPeek() (name, data []byte, ok bool) {
	b := &in.bx
	if !b.front.Load() {
		i, ok := in.boxTake()
		if !ok {
			return nil, nil, false
		}
		b.frontIdx = i
		b.front.Store(true)
	}
	b.peeked = true
	q := &b.ents[b.frontIdx]
	return q.name[:q.nlen], q.data, true
}

// boxTake takes the oldest queued record out of the box (or the records kept from it) and marks
// the box's front as the engine's.
func (in *Inbox) boxTake() (int, bool) {
	b := &in.bx
	if m := b.mem.Load(); m != nil {
		if atomic.LoadUint32(&m.count) == 0 {
			return 0, false
		}
		m.acquire()
		defer m.release()
		if m.count == 0 {
			return 0, false
		}
		i := int(m.head)
		m.head = (m.head + 1) % BoxEntries
		m.front = 1
		atomic.StoreUint32(&m.count, m.count-1)
		return i, true
	}
	if b.pCount.Load() == 0 {
		return 0, false
	}
	i := b.pHead
	b.pHead = (i + 1) % BoxEntries
	b.pCount.Add(-1)
	return i, true
}

// boxDone ends the front (Pop or Hold consumed it) and returns its token; the box's queued
// records are the library's again.
func (in *Inbox) boxDone() uint64 {
	b := &in.bx
	tok := b.ents[b.frontIdx].token // the entry stays as it is: the caller still reads the name and data Peek gave
	b.peeked = false
	if m := b.mem.Load(); m != nil {
		m.acquire()
		m.front = 0
		m.release()
	}
	b.front.Store(false)
	return tok
}

// Fold releases the records the program freed through the box (free_packets without the
// engine). A consumer method.
func (in *Inbox) Fold() {
	m := in.bx.mem.Load()
	if m == nil || atomic.LoadUint32(&m.nfree) == 0 {
		return
	}
	var toks [BoxFrees]uint64
	m.acquire()
	n := copy(toks[:], m.freed[:min(atomic.LoadUint32(&m.nfree), BoxFrees)])
	atomic.StoreUint32(&m.nfree, 0)
	m.release()
	// One store of each ring's head for the whole batch, not one per record: the producer of a
	// full ring reads that line at every send.
	var dirty [8]*ring
	nd := 0
	for _, t := range toks[:n] {
		if r := in.heldRing(t); r != nil && !r.deferShow {
			r.deferShow = true
			if nd < len(dirty) {
				dirty[nd] = r
				nd++
			} else {
				r.deferShow = false // more rings than the batch tracks: this one shows at once
			}
		}
		in.release(t) // a token the library checked; one of a closed socket's is refused
	}
	for _, r := range dirty[:nd] {
		r.deferShow = false
		r.flushShow()
	}
	in.pressure()
}

// Unbox detaches the box when fd, the fd it belongs to, stops naming the socket: records it
// queued stay with the inbox (Peek serves them first) and its deferred frees are folded in. A
// consumer method.
func (in *Inbox) Unbox(fd int) {
	b := &in.bx
	m := b.mem.Load()
	if m == nil || b.fd != fd {
		return
	}
	in.Fold()
	m.acquire()
	b.pHead = int(m.head)
	b.pCount.Store(int32(m.count)) // before the box's count goes: Pending sees them throughout
	m.resetLocked(0)
	m.release()
	b.mem.Store(nil)
}

// resetLocked empties the box (no queued record, no deferred free) and marks it attached or not;
// its lock is held.
func (m *boxMem) resetLocked(attached uint32) {
	m.front, m.head = 0, 0
	atomic.StoreUint32(&m.count, 0)
	atomic.StoreUint32(&m.nfree, 0)
	atomic.StoreUint32(&m.kread, 0)
	atomic.StoreUint32(&m.attached, attached)
}

// closeBox forgets the box and its queued records (Close: every held record goes).
func (in *Inbox) closeBox() {
	b := &in.bx
	if m := b.mem.Load(); m != nil {
		m.acquire()
		m.resetLocked(0)
		m.release()
		b.mem.Store(nil)
	}
	b.pCount.Store(0)
	b.front.Store(false)
	b.peeked = false
	b.ents = [BoxEntries]queued{}
}

// pressure sets the box's urgent word: frees go to the engine at once while the records held in
// a ring, from the oldest on, take more than half of what the sender may fill, or while a ring's
// sender is gone (its file goes with the last free). The held bytes are charged as the sender
// would charge them in the worst case: it estimates the number of records from the size of the
// datagram it sends, so before a 64-byte record every 64 bytes held count SkbOverhead more. Below
// that any datagram the sender sends fits as if the deferred frees had been made, and the
// receive it wakes folds them in.
func (in *Inbox) pressure() {
	urgent := len(in.zombies) > 0
	limit := atomic.LoadUint64(word64(in.mem, ibLimit)) // a sender may scribble on it: a hint only
	for _, r := range in.rings {
		if len(r.holds) == 0 {
			continue
		}
		room := r.cap
		if limit != 0 && limit < room {
			room = limit
		}
		span := r.head.Load() - r.holds[0].pos
		if r.lingering || 2*(span+(span/recAlign+1)*SkbOverhead) > room {
			urgent = true
			break
		}
	}
	b := &in.bx
	if urgent == b.urgent {
		return
	}
	b.urgent = urgent
	if m := b.mem.Load(); m != nil {
		atomic.StoreUint32(&m.urgent, b2u(urgent))
		if urgent {
			in.Fold() // frees left before the library could see the word
		}
	}
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

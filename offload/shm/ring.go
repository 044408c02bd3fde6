package shm

import (
	"fmt"
	"math/bits"
	"sync/atomic"
)

// The SPSC datagram ring (layout in layout.go, protocol in doc.go).
//
// Ownership: the producer (the sender's Outlet, under its mutex) writes records, tail and the
// producer counters; the consumer (the receiver's Inbox, serialized by its caller) writes head
// and detached. Each side keeps its own authoritative copy of its index and never reads it back
// from shared memory, and validates the other side's index before use: the peer may write any
// value at any time.

// ringCapacity rounds n up to a power of two within [MinRingBytes, MaxRingBytes]; 0 when n is
// above MaxRingBytes.
func ringCapacity(n int) uint64 {
	if n <= MinRingBytes {
		return MinRingBytes
	}
	if n > MaxRingBytes {
		return 0
	}
	return 1 << bits.Len64(uint64(n-1))
}

// initRing writes the header of a freshly created (zeroed) ring segment; the magic goes last.
func initRing(mem []byte, capacity uint64, pid int, start, id uint64) {
	atomic.StoreUint64(word64(mem, rgVersion), layoutVersion)
	atomic.StoreUint64(word64(mem, rgCapacity), capacity)
	atomic.StoreUint64(word64(mem, rgPID), uint64(pid))
	atomic.StoreUint64(word64(mem, rgStart), start)
	atomic.StoreUint64(word64(mem, rgID), id)
	atomic.StoreUint64(word64(mem, rgMagic), ringMagic)
}

// producer is the sending side of one ring. Its state (s) lies outside Go memory, shared with
// the preload library's sends (prod_unsafe.go): every use of it is under s's lock.
type producer struct {
	data      []byte // the data area, cap bytes
	cap, mask uint64
	s         *prodState

	tailp, headp, pushedp, dropsp, wakesp, closedp, detachedp, busyp *uint64
}

func newProducer(mem []byte, capacity uint64, s *prodState) *producer {
	return &producer{
		data:      mem[ringDataOff : ringDataOff+int(capacity)],
		cap:       capacity,
		mask:      capacity - 1,
		s:         s,
		tailp:     word64(mem, rgTail),
		headp:     word64(mem, rgHead),
		pushedp:   word64(mem, rgPushed),
		dropsp:    word64(mem, rgDrops),
		wakesp:    word64(mem, rgWakes),
		closedp:   word64(mem, rgClosed),
		detachedp: word64(mem, rgDetached),
		busyp:     word64(mem, rgBusy),
	}
}

// fits reports whether a datagram of total bytes stays within a receive-buffer limit. Like the
// kernel, which charges each queued packet its size plus a fixed overhead against SO_RCVBUF, the
// unread bytes are charged with SkbOverhead per record, the record count estimated from this
// datagram's record size. An empty ring always takes one datagram. The consumer's head is
// loaded only when the cached one says no.
func (p *producer) fits(total int, limit uint64) bool {
	rec := recSize(total)
	charge := func(used uint64) uint64 { return used + used/rec*SkbOverhead + rec + SkbOverhead }
	if charge(p.s.tail-p.s.headCache) <= limit {
		return true
	}
	h := atomic.LoadUint64(p.headp)
	if h > p.s.tail || p.s.tail-h > p.cap || h < p.s.headCache {
		return true // put reports the corruption
	}
	p.s.headCache = h
	return p.s.tail == h || charge(p.s.tail-h) <= limit
}

// put appends one record of kind (kindData or kindAfterKernel) and publishes it. It returns ErrFull (a drop is counted) when the
// record does not fit, ErrCorrupt when the consumer's head is impossible. If copying from bufs
// panics, nothing is published and the ring stays as it was.
func (p *producer) put(name []byte, bufs [][]byte, total int, kind byte) error {
	rec := recSize(total)
	off := p.s.tail & p.mask
	need := rec
	pad := uint64(0)
	if off+rec > p.cap {
		pad = p.cap - off
		need += pad
	}
	if need > p.cap-(p.s.tail-p.s.headCache) {
		h := atomic.LoadUint64(p.headp)
		if h > p.s.tail || p.s.tail-h > p.cap || h&(recAlign-1) != 0 || h < p.s.headCache {
			return fmt.Errorf("send: consumer head %d against tail %d: %w", h, p.s.tail, ErrCorrupt)
		}
		p.s.headCache = h
		if need > p.cap-(p.s.tail-h) {
			p.s.drops++
			atomic.StoreUint64(p.dropsp, p.s.drops)
			return ErrFull
		}
	}
	if pad != 0 {
		atomic.StoreUint64(word64(p.data, int(off)), recWord(int(pad/recAlign), 0, kindPad, p.s.tail))
		off = 0
	}
	// Payload first, header last; nothing is visible before the tail store.
	dst := p.data[off+recHdr : off+recHdr+uint64(total)]
	n := 0
	for _, b := range bufs {
		if n == len(dst) {
			break
		}
		n += copy(dst[n:], b)
	}
	copy(p.data[off+recNameOff:off+recNameOff+MaxName], name)
	// The word last: it publishes the record to a consumer polling it (peek).
	atomic.StoreUint64(word64(p.data, int(off)), recWord(n, len(name), kind, p.s.tail+pad))
	p.s.tail += pad + recSize(n)
	// pushed before tail, in the same cache line: one transfer of the line to the receiver,
	// which polls tail, instead of two (the count may lead the tail by a record in statistics).
	p.s.pushed++
	atomic.StoreUint64(p.pushedp, p.s.pushed)
	atomic.SwapUint64(p.tailp, p.s.tail) // a full barrier before needWake's loads: wake.go
	return nil
}

// ring is the receiving side of one attached ring.
type ring struct {
	mem       []byte // the whole mapping
	data      []byte // the data area
	cap, mask uint64
	tailp     *uint64
	headp     *uint64
	head      atomic.Uint64 // authoritative head (Pending reads it from other goroutines)
	empties   uint32        // peeks that found no published record (tailCheck)
	after     bool          // the record peek returned last is a kindAfterKernel one
	popped    uint64
	shown     uint64 // the head last stored to *headp (pop, show)
	// deferShow: releases leave the head to show in showWant (showDue) for flushShow (Fold).
	deferShow bool
	showDue   bool
	showWant  uint64
	holds     []heldRec // records the program holds, oldest first (hold.go)
	holdArr   []heldRec // the array holds lies in, from its start (hold.go)

	// Identity and lifetime, owned by the Inbox.
	path      string
	slot      int    // slot index it was registered in
	tag       uint64 // the slot's tag when attached
	pid       int
	start     uint64
	id        uint64
	lingering bool // sender closed or gone, or slot reclaimed: detach once drained
	dead      bool // the sender died: detach removes its pool name too (ring_pool.go)
	zombie    bool // detached with records held: unmapped when the last is freed (hold.go)
}

// newRing validates the header of a mapped ring segment and returns its consumer. The header
// is read once: the capacity the consumer uses from then on is its private copy.
func newRing(mem []byte) (*ring, error) {
	if len(mem) < ringDataOff+MinRingBytes {
		return nil, fmt.Errorf("attach ring: %d bytes: %w", len(mem), ErrCorrupt)
	}
	if atomic.LoadUint64(word64(mem, rgMagic)) != ringMagic ||
		atomic.LoadUint64(word64(mem, rgVersion)) != layoutVersion {
		return nil, fmt.Errorf("attach ring: bad magic or version: %w", ErrCorrupt)
	}
	c := atomic.LoadUint64(word64(mem, rgCapacity))
	if c < MinRingBytes || c > MaxRingBytes || c&(c-1) != 0 || uint64(len(mem)) != ringDataOff+c {
		return nil, fmt.Errorf("attach ring: capacity %d for %d bytes: %w", c, len(mem), ErrCorrupt)
	}
	return &ring{
		mem:   mem,
		data:  mem[ringDataOff : ringDataOff+int(c)],
		cap:   c,
		mask:  c - 1,
		tailp: word64(mem, rgTail),
		headp: word64(mem, rgHead),
		pid:   int(atomic.LoadUint64(word64(mem, rgPID))),
		start: atomic.LoadUint64(word64(mem, rgStart)),
		id:    atomic.LoadUint64(word64(mem, rgID)),
	}, nil
}

// peek validates and returns the oldest record: name and payload alias the data area; next is
// the head after it. ErrEmpty when no record is published at the head, ErrCorrupt when anything
// does not validate. Every loop is bounded: at most one padding record precedes a data record.
func (r *ring) peek() (name, data []byte, next uint64, err error) {
	h := r.head.Load()
	for range 2 {
		off := h & r.mask
		length, namelen, kind, ok := r.record(h)
		if !ok {
			if err := r.unpublished(h); err != nil {
				return nil, nil, 0, err
			}
			r.showAll()
			return nil, nil, 0, ErrEmpty
		}
		switch kind {
		case kindPad:
			skip := r.cap - off
			if off == 0 || length*recAlign != skip {
				return nil, nil, 0, ErrCorrupt
			}
			h += skip
		case kindData, kindAfterKernel:
			r.after = kind == kindAfterKernel
			rec := recSize(int(length))
			if length > MaxPayload || namelen > MaxName || off+rec > r.cap {
				return nil, nil, 0, ErrCorrupt
			}
			return r.data[off+recNameOff : off+recNameOff+namelen : off+recNameOff+namelen],
				r.data[off+recHdr : off+recHdr+length : off+recHdr+length], h + rec, nil
		default:
			return nil, nil, 0, ErrCorrupt
		}
	}
	return nil, nil, 0, ErrCorrupt
}

// tailCheck is how many peeks that find no record at the head pass between two looks at the
// producer's tail: a peer that scribbled on a record word (the tail then says published, the
// word does not) is found within that many polls, and a polling consumer reads the tail's line
// only once in that many.
const tailCheck = 64

// unpublished is peek's check when no record is published at h: ErrCorrupt when the producer's
// tail says there is one. The producer stores a record's word before the tail that covers it,
// and the tail trails the words, so a tail below h is no corruption (the consumer took a
// record whose tail the producer has not stored yet) unless it is more than a ring behind.
func (r *ring) unpublished(h uint64) error {
	if r.empties++; r.empties%tailCheck != 0 {
		return nil
	}
	t := atomic.LoadUint64(r.tailp)
	switch {
	case t&(recAlign-1) != 0 || t > h && t-h > r.cap || t < h && h-t > r.cap:
		return ErrCorrupt
	case t <= h:
		return nil
	}
	// Loaded after the tail, the word must be the record's now.
	if _, _, _, ok := r.record(h); !ok {
		return ErrCorrupt
	}
	return nil
}

// record loads the word of the record at position pos (atomically: the producer stores it last)
// and unpacks it; ok is false when it is not the word of a record published at pos (a word of an
// earlier lap, or the zeroed area).
func (r *ring) record(pos uint64) (length, namelen uint64, kind byte, ok bool) {
	length, namelen, kind, seq := recFields(atomic.LoadUint64(word64(r.data, int(pos&r.mask))))
	return length, namelen, kind, seq == recSeq(pos) && kind != 0
}

// headLag is how far the head the producer sees (*headp) may trail the consumer's. Each store
// to it is a locked instruction on a line the producer reads at each send of a full ring (its
// SO_RCVBUF charge, fits): stored at every pop, it was 15% of a sockperf UDP throughput
// receiver's time (perf, 2-CPU test machine), the line moving between the CPUs twice a datagram.
// A consumer that finds its ring empty shows the whole head (peek), so the lag is never left
// behind a drained ring; while it trails, the producer charges up to headLag more unread bytes
// (with SkbOverhead per record: ~10 KB for 64-byte datagrams, ~5% of the default SO_RCVBUF).
// A small ring's lag is a 16th of it (lag).
const headLag = 2048

// lag is the ring's headLag: at most a 16th of its capacity.
func (r *ring) lag() uint64 { return min(headLag, r.cap/16) }

// pop consumes up to next (a value peek returned) and tells the producer, unless records before
// it are held (hold.go): the producer's head then moves when they are freed. It tells it every
// lag() bytes, and when the ring is found empty (showAll).
func (r *ring) pop(next uint64) {
	r.head.Store(next)
	r.popped++
	if len(r.holds) == 0 && next-r.shown >= r.lag() {
		r.show(next)
	}
}

// show stores h as the head the producer sees.
func (r *ring) show(h uint64) {
	r.shown = h
	atomic.StoreUint64(r.headp, h)
}

// showAll shows the consumer's head when it runs ahead of the shown one and no record is held.
func (r *ring) showAll() {
	if h := r.head.Load(); h != r.shown && len(r.holds) == 0 {
		r.show(h)
	}
}

// published reports whether peek would find a record (or detach a corrupt ring) at the head,
// from the record words, atomic loads only, safe from any goroutine: the consumer's polls read
// the lines its next record comes in, never the producer's tail. After a padding record it
// looks at the word at the start of the next lap (a producer that died between the two leaves
// nothing published). A head that moved meanwhile (another consumer thread) answers true: the
// caller then peeks under the consumer's lock, where the answer is exact.
//
// The wake protocol holds with it as with the tail: the producer stores the word before its
// tail swap, a full barrier before it loads the spinners (wake.go).
func (r *ring) published() bool {
	h := r.head.Load()
	pos := h
	for range 2 {
		_, _, kind, ok := r.record(pos)
		if !ok {
			return r.head.Load() != h
		}
		if kind != kindPad {
			return true
		}
		pos += r.cap - pos&r.mask
	}
	return true // two padding records: corrupt, peek detaches the ring
}

// stats returns the ring's counters as the receiver sees them (producer counters are the
// producer's word: clamped, never trusted for anything but display).
func (r *ring) stats() RingStats {
	h := r.head.Load()
	t := atomic.LoadUint64(r.tailp)
	depth := t - h
	if depth > r.cap {
		depth = 0
	}
	pushed := atomic.LoadUint64(word64(r.mem, rgPushed))
	recs := pushed - r.popped
	if pushed < r.popped {
		recs = 0
	}
	return RingStats{
		PID:          r.pid,
		DepthBytes:   depth,
		DepthRecords: recs,
		Pushed:       pushed,
		Drops:        atomic.LoadUint64(word64(r.mem, rgDrops)),
		Wakes:        atomic.LoadUint64(word64(r.mem, rgWakes)),
	}
}

// RingStats are the counters of one attached ring.
type RingStats struct {
	PID          int    // sender process
	DepthBytes   uint64 // bytes published and not yet consumed
	DepthRecords uint64 // records published and not yet consumed
	Pushed       uint64 // records the sender published
	Drops        uint64 // datagrams the sender refused with ErrFull
	Wakes        uint64 // wake-ups the sender requested
}

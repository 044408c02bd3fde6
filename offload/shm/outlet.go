package shm

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goxio/goxio/internal/procstat"
	"github.com/goxio/goxio/internal/shmseg"

	"golang.org/x/sys/unix"
)

// ringSeq numbers the rings this process creates (the n of <inbox>.<pid>.<n>, combined with
// the start time so that a later process with the same pid never picks the same name).
var ringSeq atomic.Uint64

// Outlet is one process's sending side towards one Inbox: it creates its own ring segment
// <dir>/<inboxname>.<pid>.<n> and registers it in a free slot of the inbox. Safe for concurrent
// use (a mutex serializes the producer side).
type Outlet struct {
	mu       sync.Mutex
	p        *producer // nil once closed
	ibMem    []byte
	ringMem  []byte
	ringPath string
	pool     pooledRing // the ring as the pool keeps it after Close (ring_pool.go)
	slot     int
	tag      uint64

	ibClosed    *uint64
	genp        *uint64
	spinners    *int32
	wakePending *uint32
}

// DialInbox opens the inbox <dir>/<inboxName>, creates a ring of ringBytes data capacity
// (rounded up to a power of two in [MinRingBytes, MaxRingBytes]) and registers it in a free slot
// (claimed by CAS; a slot claimed by a dead process is reclaimed and its ring file removed).
// ErrFull when no slot is free, ErrClosed when the inbox is closed or its owner is no longer
// running, ErrNoSpace when the file system is full, ErrCorrupt when the inbox does not validate.
func DialInbox(dir, inboxName string, ringBytes int) (*Outlet, error) {
	if !validName(inboxName) {
		return nil, fmt.Errorf("dial inbox %q: invalid name: %w", inboxName, unix.EINVAL)
	}
	capacity := ringCapacity(ringBytes)
	if capacity == 0 {
		return nil, fmt.Errorf("dial inbox %q: ring of %d bytes: %w", inboxName, ringBytes, ErrTooBig)
	}
	pid, start, err := selfIdentity()
	if err != nil {
		return nil, fmt.Errorf("dial inbox %q: own start time: %w", inboxName, err)
	}
	ib, err := openSegment(shmseg.Join(dir, inboxName), inboxSize(1), inboxSize(MaxSlots))
	if err != nil {
		return nil, fmt.Errorf("dial inbox: %w", err)
	}
	o := &Outlet{
		ibMem:       ib,
		ibClosed:    word64(ib, ibClosed),
		genp:        word64(ib, ibGen),
		spinners:    int32At(ib, ibSpinners),
		wakePending: word32(ib, ibWake),
	}
	slots := atomic.LoadUint64(word64(ib, ibSlots))
	if atomic.LoadUint64(word64(ib, ibMagic)) != inboxMagic ||
		atomic.LoadUint64(word64(ib, ibVersion)) != layoutVersion ||
		slots < 1 || slots > MaxSlots || inboxSize(int(slots)) != len(ib) {
		shmseg.Unmap(ib)
		return nil, fmt.Errorf("dial inbox %q: bad header: %w", inboxName, ErrCorrupt)
	}
	// The owner was usually found alive by the discovery look-up that named the inbox a moment
	// ago (procstat.AliveRecent); an inbox whose owner closed it says so in its header.
	if atomic.LoadUint64(o.ibClosed) != 0 ||
		!procstat.AliveRecent(int(atomic.LoadUint64(word64(ib, ibPID))), atomic.LoadUint64(word64(ib, ibStart))) {
		shmseg.Unmap(ib)
		return nil, fmt.Errorf("dial inbox %q: closed or owner gone: %w", inboxName, ErrClosed)
	}

	// The ring file, under a name no other live or dead process uses (ring_pool.go).
	var id uint64
	for try := 0; ; try++ {
		id = start<<20 | ringSeq.Add(1)&(1<<20-1)
		o.ringPath = shmseg.Join(dir, ringName(inboxName, pid, id))
		o.pool, err = newRingFile(dir, inboxName, capacity, pid, start, id)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EEXIST) || try == 8 {
			shmseg.Unmap(ib)
			return nil, fmt.Errorf("dial inbox %q: ring: %w", inboxName, err)
		}
	}
	o.ringMem = o.pool.mem
	ps, err := newProdState(o.ringMem, ib, capacity)
	if err != nil {
		shmseg.Unlink(o.ringPath)
		dropRing(o.pool)
		shmseg.Unmap(ib)
		return nil, fmt.Errorf("dial inbox %q: %w", inboxName, err)
	}
	o.p = newProducer(o.ringMem, capacity, ps)

	if err := o.register(inboxName, dir, int(slots), pid, start, id); err != nil {
		ps.close()
		shmseg.Unlink(o.ringPath)
		dropRing(o.pool)
		shmseg.Unmap(ib)
		return nil, fmt.Errorf("dial inbox %q: %w", inboxName, err)
	}
	return o, nil
}

// register claims a slot for our ring and publishes it.
func (o *Outlet) register(inboxName, dir string, slots, pid int, start, id uint64) error {
	slot, tag := -1, uint64(0)
	// First a free slot, then one whose owner is dead.
	for pass := 0; pass < 2 && slot < 0; pass++ {
		for i := range slots {
			base := slotTableOff + i*slotSize
			tp := word64(o.ibMem, base+slTag)
			t := atomic.LoadUint64(tp)
			owner := tagPID(t)
			if pass == 0 && owner != 0 {
				continue
			}
			var oldID uint64
			if pass == 1 {
				if owner == 0 {
					continue
				}
				ostart := uint64(0) // not ready: its claimer may still be writing
				if tagIsReady(t) {
					ostart = atomic.LoadUint64(word64(o.ibMem, base+slStart))
					oldID = atomic.LoadUint64(word64(o.ibMem, base+slID))
				}
				if processAlive(owner, ostart) {
					continue
				}
			}
			nt := claimTag(pid, t)
			if !atomic.CompareAndSwapUint64(tp, t, nt) {
				continue
			}
			if pass == 1 && tagIsReady(t) {
				// The dead sender's ring: the receiver keeps its mapping if it attached it.
				shmseg.Unlink(shmseg.Join(dir, ringName(inboxName, owner, oldID)))
			}
			slot, tag = i, nt
			break
		}
	}
	if slot < 0 {
		return ErrFull
	}
	base := slotTableOff + slot*slotSize
	atomic.StoreUint64(word64(o.ibMem, base+slStart), start)
	atomic.StoreUint64(word64(o.ibMem, base+slID), id)
	if !atomic.CompareAndSwapUint64(word64(o.ibMem, base+slTag), tag, tag|tagReady) {
		return fmt.Errorf("slot %d taken over while registering: %w", slot, ErrCorrupt)
	}
	o.slot, o.tag = slot, tag|tagReady
	atomic.AddUint64(o.genp, 1)
	// Closed while we registered: its Close may have scanned the slots before our ready bit.
	if atomic.LoadUint64(o.ibClosed) != 0 {
		return ErrClosed
	}
	return nil
}

// Send copies one datagram (name = source sockaddr bytes as the receiver must see them, payload =
// concatenation of bufs, total bytes of it) into the ring. ErrFull when it does not fit (the
// ring counts a drop), ErrTooBig above MaxPayload payload bytes or MaxName name bytes, ErrClosed
// when the inbox was closed or detached our ring, ErrCorrupt when the receiver's head index is
// impossible. The errors are the bare sentinels: Send does not allocate.
//
// wake reports that the receiver needs a wake-up (nobody spins on it and no wake-up is pending):
// the caller then sends the wake datagram through the kernel.
//
// Copying from bufs may fault (they point into the program's memory): the record is published
// only after the copy, so a panic leaves the ring as it was (and the mutex released).
func (o *Outlet) Send(name []byte, bufs [][]byte, total int) (wake bool, err error) {
	return o.send(name, bufs, total, kindData)
}

// SendAfterKernel is Send for a datagram whose socket sent datagrams to the same receiver through
// the kernel before (a socket the preload library served until now): the receiver takes what its
// kernel socket holds before this one (Inbox.TakeAfterKernel), so the socket's datagrams arrive
// in the order it sent them.
func (o *Outlet) SendAfterKernel(name []byte, bufs [][]byte, total int) (wake bool, err error) {
	return o.send(name, bufs, total, kindAfterKernel)
}

func (o *Outlet) send(name []byte, bufs [][]byte, total int, kind byte) (wake bool, err error) {
	if total < 0 || total > MaxPayload || len(name) > MaxName {
		return false, ErrTooBig
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.p
	if p == nil {
		return false, ErrClosed
	}
	p.s.acquire()
	defer p.s.release()
	// busy brackets the closed check and the publish (Swap: a full barrier before the load),
	// so a receiver that seals the inbox (Inbox.Seal) either is seen here or sees us and waits.
	atomic.SwapUint64(p.busyp, 1)
	defer atomic.SwapUint64(p.busyp, 0)
	if atomic.LoadUint64(o.ibClosed) != 0 || atomic.LoadUint64(p.detachedp) != 0 {
		return false, ErrClosed
	}
	if limit := atomic.LoadUint64(word64(o.ibMem, ibLimit)); limit != 0 && !p.fits(total, limit) {
		p.s.drops++
		atomic.StoreUint64(p.dropsp, p.s.drops)
		return false, ErrFull
	}
	if err := p.put(name, bufs, total, kind); err != nil {
		return false, err
	}
	wake = needWake(o.spinners, nil, o.wakePending)
	if wake {
		p.s.wakes++
		atomic.StoreUint64(p.wakesp, p.s.wakes)
	}
	p.s.count(total, wake)
	return wake, nil
}

// Closed reports whether the inbox was closed by its owner (or our ring detached by it, or the
// Outlet closed): Send can only fail with ErrClosed from now on.
func (o *Outlet) Closed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.p == nil || atomic.LoadUint64(o.ibClosed) != 0 || atomic.LoadUint64(o.p.detachedp) != 0
}

// Close marks our ring closed and unmaps. The ring file stays until the receiver drained and
// unlinked it; Close unlinks it itself when the inbox is closed or its owner is dead. A ring the
// receiver detached is kept mapped for this process's next outlet (ring_pool.go).
func (o *Outlet) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.p == nil {
		return nil
	}
	o.p.s.close() // no send (the library's neither) reaches the mappings from here on
	o.p = nil
	atomic.StoreUint64(word64(o.ringMem, rgClosed), 1)
	atomic.AddUint64(o.genp, 1)
	var first error
	detached := atomic.LoadUint64(word64(o.ringMem, rgDetached)) != 0 // the receiver unlinks the ring name
	if !detached && (atomic.LoadUint64(o.ibClosed) != 0 ||
		!processAlive(int(atomic.LoadUint64(word64(o.ibMem, ibPID))), atomic.LoadUint64(word64(o.ibMem, ibStart)))) {
		first = shmseg.Unlink(o.ringPath)
	}
	if detached && o.pool.mem != nil {
		ringPoolPut(o.pool) // the receiver's last access was its detach
	} else {
		dropRing(o.pool) // our pool name; the receiver keeps its mapping and the ring name
	}
	if err := shmseg.Unmap(o.ibMem); err != nil && first == nil {
		first = err
	}
	o.ringMem, o.ibMem = nil, nil
	if first != nil {
		return fmt.Errorf("close outlet: %w", first)
	}
	return nil
}

// Stats returns this ring's counters as the sender knows them (PID is our own).
func (o *Outlet) Stats() RingStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.p == nil {
		return RingStats{}
	}
	o.p.s.acquire()
	defer o.p.s.release()
	h := atomic.LoadUint64(o.p.headp)
	depth := o.p.s.tail - h
	if depth > o.p.cap {
		depth = 0
	}
	return RingStats{PID: unix.Getpid(), DepthBytes: depth, Pushed: o.p.s.pushed, Drops: o.p.s.drops, Wakes: o.p.s.wakes}
}

// Producer returns where the preload library finds this outlet's producer state (shim/goxio.h,
// struct goxio_prod) and the epoch that names this outlet in it; 0, 0 once closed. The epoch
// changes only at Close, under o.mu.
func (o *Outlet) Producer() (addr uintptr, epoch uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.p == nil {
		return 0, 0
	}
	return o.p.s.addr(), o.p.s.epoch
}

// CountInto has the preload library's sends count into the outlet's statistics ring words: tx
// packets and bytes, and wake-ups sent (nil: not counted there).
func (o *Outlet) CountInto(tx *[2]uint64, wake *uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.p != nil {
		o.p.s.setStats(tx, wake)
	}
}

package shm

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/goxio/goxio/internal/shmseg"

	"golang.org/x/sys/unix"
)

// sweepInterval is how often Refresh looks for senders that died without closing (one /proc
// read per attached ring). A variable for tests.
var sweepInterval = 200 * time.Millisecond

// Inbox is the receiving side of one offloaded UDP socket: a segment <dir>/<name> holding a
// header and a table of slots; each slot names one sender's ring (a separate segment the sender
// created). Consumer methods (Peek, Pop, Refresh) are called by one goroutine at a time (the
// caller serializes, and Stats and Close count as consumer methods); Pending, Stale, SpinBegin,
// SpinEnd, ClearWake, CorruptRings and AttachFailures are safe from any goroutine.
type Inbox struct {
	dir, name, path string
	mem             []byte
	slots           int

	genp        *uint64
	closedp     *uint64
	spinners    *int32
	wakePending *uint32

	// Consumer state (serialized by the caller).
	rings    []*ring // attached rings, round-robin order
	bySlot   []*ring // the ring currently registered in each slot
	failed   []uint64
	cur      int
	peekRing *ring
	peekNext uint64
	peekIdx  int
	// peekAfter: the record peeked is a kindAfterKernel one not taken yet (TakeAfterKernel);
	// takenRing and takenPos are the last one taken.
	peekAfter bool
	takenRing *ring
	takenPos  uint64
	lingering int  // rings waiting to be drained before detaching
	rescan    bool // an attach failed for want of resources: scan again
	retired   [][]byte
	lastSweep time.Time
	holdTab   []holdEntry // records the program holds (hold.go)
	holdFree  int32       // first free entry of holdTab, -1: none
	heldNow   int
	// genNext..genEnd: the hold numbers this inbox took from holdGen and has not used yet
	genNext, genEnd uint32
	zombies         []*ring  // detached rings kept mapped for their held records
	bx              boxState // records queued for the preload library, its deferred frees (hold_box.go)

	// Shared with Pending and the wake methods.
	list    atomic.Pointer[[]*ring] // copy of rings for Pending
	seenGen atomic.Uint64           // slot generation the last Refresh scanned
	// Stale's view of the consumer state: unsettled is set while rings linger or a scan is to
	// be retried; looks counts Stale calls, sweepDue asks Refresh for a sweep.
	unsettled atomic.Bool
	looks     atomic.Uint64
	sweepDue  atomic.Bool
	readers   atomic.Int32 // concurrent methods in flight (see enter)
	closed    atomic.Bool
	corrupt   atomic.Uint64
	failures  atomic.Uint64
}

// CreateInbox creates the inbox segment <dir>/<name> with slots sender slots (1..MaxSlots).
// A leftover file of the same name whose owner is dead is replaced; a live one gives an error
// wrapping unix.EEXIST.
func CreateInbox(dir, name string, slots int) (*Inbox, error) {
	if !validName(name) {
		return nil, fmt.Errorf("create inbox %q: invalid name: %w", name, unix.EINVAL)
	}
	if slots < 1 || slots > MaxSlots {
		return nil, fmt.Errorf("create inbox %q: %d slots outside [1, %d]: %w", name, slots, MaxSlots, unix.EINVAL)
	}
	pid, start, err := selfIdentity()
	if err != nil {
		return nil, fmt.Errorf("create inbox %q: own start time: %w", name, err)
	}
	path := shmseg.Join(dir, name)
	size := inboxSize(slots)
	mem, err := createSegment(path, size)
	if errors.Is(err, unix.EEXIST) && removeStaleInbox(path) {
		mem, err = createSegment(path, size)
	}
	if err != nil {
		return nil, fmt.Errorf("create inbox: %w", err)
	}
	atomic.StoreUint64(word64(mem, ibVersion), layoutVersion)
	atomic.StoreUint64(word64(mem, ibSlots), uint64(slots))
	atomic.StoreUint64(word64(mem, ibPID), uint64(pid))
	atomic.StoreUint64(word64(mem, ibStart), start)
	atomic.StoreUint64(word64(mem, ibMagic), inboxMagic)
	in := &Inbox{
		dir: dir, name: name, path: path, mem: mem, slots: slots,
		genp:        word64(mem, ibGen),
		closedp:     word64(mem, ibClosed),
		spinners:    int32At(mem, ibSpinners),
		wakePending: word32(mem, ibWake),
		bySlot:      make([]*ring, slots),
		failed:      make([]uint64, slots),
		lastSweep:   time.Now(),
		holdFree:    -1,
	}
	in.list.Store(&[]*ring{})
	return in, nil
}

// removeStaleInbox unlinks the inbox file at path when it is not a valid inbox of a live owner.
func removeStaleInbox(path string) bool {
	mem, err := openSegment(path, inboxSize(1), inboxSize(MaxSlots))
	if err != nil {
		return false
	}
	defer shmseg.Unmap(mem)
	if atomic.LoadUint64(word64(mem, ibMagic)) == inboxMagic &&
		atomic.LoadUint64(word64(mem, ibClosed)) == 0 &&
		processAlive(int(atomic.LoadUint64(word64(mem, ibPID))), atomic.LoadUint64(word64(mem, ibStart))) {
		return false
	}
	return shmseg.Unlink(path) == nil
}

// Name returns the inbox's segment name (what senders pass to DialInbox).
func (in *Inbox) Name() string { return in.name }

// enter starts a method that may run concurrently with Close; false after Close.
func (in *Inbox) enter() bool {
	in.readers.Add(1)
	if in.closed.Load() {
		in.readers.Add(-1)
		return false
	}
	return true
}

func (in *Inbox) leave() { in.readers.Add(-1) }

// Peek returns the oldest datagram of the next non-empty ring (round robin over rings, so one
// busy sender cannot starve the others). name is the source sockaddr bytes the sender wrote
// (0..28 bytes), data the payload; both alias shared memory and are valid until Pop or the next
// Peek (the sender may scribble on them: copy before trusting). ErrEmpty when every ring is
// empty, ErrClosed after Close. A ring found corrupt is detached (CorruptRings counts it) and
// skipped: never returned as an error.
func (in *Inbox) Peek() (name, data []byte, err error) {
	in.peekRing = nil
	in.bx.peeked = false
	if in.closed.Load() {
		return nil, nil, ErrClosed
	}
	in.Fold()
	if name, data, ok := in.boxPeek(); ok {
		return name, data, nil // queued for the preload library: older than the rings' records
	}
	return in.PeekRings()
}

// PeekRings is Peek without the records queued in the box (hold_box.go): the next ring record,
// for Queue.
func (in *Inbox) PeekRings() (name, data []byte, err error) {
	in.peekAfter = false
	in.peekRing = nil
	in.bx.peeked = false
	if in.closed.Load() {
		return nil, nil, ErrClosed
	}
	for {
		n := len(in.rings)
		if in.cur >= n {
			in.cur = 0
		}
		bad := -1
		for i := range n {
			idx := in.cur + i
			if idx >= n {
				idx -= n
			}
			r := in.rings[idx]
			name, data, next, err := r.peek()
			if err == nil {
				in.peekRing, in.peekNext, in.peekIdx = r, next, idx
				if r.after && (in.takenRing != r || in.takenPos != r.head.Load()) {
					in.peekAfter = true
				}
				return name, data, nil
			}
			if err == ErrCorrupt {
				bad = idx
				break
			}
		}
		if bad < 0 {
			return nil, nil, ErrEmpty
		}
		// Each round detaches one ring: the loop ends.
		in.corrupt.Add(1)
		in.detach(in.rings[bad])
		in.publish()
	}
}

// Pop consumes what the last Peek returned (nothing when it returned an error).
func (in *Inbox) Pop() {
	if in.bx.peeked {
		in.Release(in.boxDone())
		return
	}
	r := in.peekRing
	if r == nil {
		return
	}
	r.pop(in.peekNext)
	in.peekRing = nil
	in.cur = in.peekIdx + 1
}

// TakeAfterKernel reports, once per record, whether the record the last Peek or PeekRings
// returned came from a socket that sent to this receiver through the kernel before it
// (Outlet.SendAfterKernel): the caller then takes its kernel socket's datagrams first, and the
// next peek of the same record says false.
func (in *Inbox) TakeAfterKernel() bool {
	if !in.peekAfter || in.peekRing == nil {
		return false
	}
	in.peekAfter = false
	in.takenRing, in.takenPos = in.peekRing, in.peekRing.head.Load()
	return true
}

// PeekedAfterKernel reports whether TakeAfterKernel would report true now, without taking it.
func (in *Inbox) PeekedAfterKernel() bool { return in.peekAfter && in.peekRing != nil }

// Pending reports whether Peek may find a datagram: some attached ring has data, or a sender
// registered or left since the last Refresh (call Refresh, then Peek). Atomic loads only; safe
// from any goroutine; false after Close.
func (in *Inbox) Pending() bool {
	if !in.enter() {
		return false
	}
	p := atomic.LoadUint64(in.genp) != in.seenGen.Load() || in.BoxQueued()
	if !p {
		for _, r := range *in.list.Load() {
			if r.published() {
				p = true
				break
			}
		}
	}
	in.leave()
	return p
}

// CorruptRings returns how many rings were detached because they did not validate.
func (in *Inbox) CorruptRings() uint64 { return in.corrupt.Load() }

// AttachFailures returns how many registered rings could not be attached (missing file, wrong
// owner, size or header).
func (in *Inbox) AttachFailures() uint64 { return in.failures.Load() }

// Refresh attaches rings of newly registered senders and detaches rings whose sender closed or
// died (pid gone or pid reused: the start time from /proc/PID/stat differs) once drained,
// unlinking their files and freeing their slots. Cheap when nothing changed (one atomic load of
// the slot generation, plus a clock read every 64 calls); the caller calls it before Peek when
// Peek says ErrEmpty, and now and then. Senders that died without closing are looked for at most
// every 200 ms.
func (in *Inbox) Refresh() {
	if in.closed.Load() {
		return
	}
	defer func() { in.unsettled.Store(in.lingering > 0 || in.rescan) }()
	sweep := false
	if in.sweepDue.Swap(false) || in.looks.Add(1)&63 == 0 {
		if now := time.Now(); now.Sub(in.lastSweep) >= sweepInterval {
			sweep = true
			in.lastSweep = now
		}
	}
	g := atomic.LoadUint64(in.genp)
	if g == in.seenGen.Load() && in.lingering == 0 && !sweep && !in.rescan {
		return
	}
	changed := false
	if g != in.seenGen.Load() || in.rescan {
		in.seenGen.Store(g)
		in.rescan = false
		changed = in.scanSlots()
	}
	if sweep {
		for _, r := range in.rings {
			if !r.lingering && !processAlive(r.pid, r.start) {
				r.dead = true
				in.linger(r)
			}
		}
	}
	if in.lingering > 0 {
		for i := 0; i < len(in.rings); {
			r := in.rings[i]
			// Drained: nothing published at the head. Not the tail: a sender killed between a
			// record's word and its tail store leaves a tail behind the head for good.
			// Held records keep it: the program reads them in place.
			if r.lingering && !r.published() && len(r.holds) == 0 {
				in.detach(r)
				changed = true
				continue
			}
			i++
		}
	}
	if changed {
		in.publish()
	}
	in.pressure() // a ring whose sender went: its held records' frees are urgent
}

// Stale reports whether Refresh has work: a sender registered or left, a ring waits to be
// drained, an attach is to be retried, or (looked at every 64 calls) a sweep for dead senders is
// due. Safe from any goroutine: a receive path that finds the rings empty calls it without its
// lock and takes the lock for Refresh only when it says so.
func (in *Inbox) Stale() bool {
	if in.closed.Load() {
		return false
	}
	if atomic.LoadUint64(in.genp) != in.seenGen.Load() || in.unsettled.Load() {
		return true
	}
	if in.looks.Add(1)&63 == 0 {
		in.sweepDue.Store(true)
		return true
	}
	return false
}

// scanSlots compares the slot table with the attached rings; true when rings were attached.
func (in *Inbox) scanSlots() bool {
	changed := false
	for i := range in.slots {
		base := slotTableOff + i*slotSize
		tp := word64(in.mem, base+slTag)
		t := atomic.LoadUint64(tp)
		if cur := in.bySlot[i]; cur != nil {
			if cur.tag == t {
				if !cur.lingering && atomic.LoadUint64(word64(cur.mem, rgClosed)) != 0 {
					in.linger(cur)
				}
				continue
			}
			// Freed or reclaimed by another sender: ours is gone; drain what it left.
			in.bySlot[i] = nil
			cur.slot = -1
			if !cur.lingering {
				in.linger(cur)
			}
		}
		if !tagIsReady(t) || in.failed[i] == t {
			continue
		}
		start := atomic.LoadUint64(word64(in.mem, base+slStart))
		id := atomic.LoadUint64(word64(in.mem, base+slID))
		if atomic.LoadUint64(tp) != t {
			continue // being rewritten; its writer bumps the generation again
		}
		r, err := in.attach(tagPID(t), start, id)
		if err != nil {
			if permanent(err) {
				in.failed[i] = t
				in.failures.Add(1)
			} else {
				in.rescan = true // out of fds or memory: try again on the next Refresh
			}
			continue
		}
		r.slot, r.tag = i, t
		in.bySlot[i] = r
		in.rings = append(in.rings, r)
		if atomic.LoadUint64(word64(r.mem, rgClosed)) != 0 {
			in.linger(r) // closed before we ever saw it
		}
		changed = true
	}
	return changed
}

// attach maps the ring <name>.<pid>.<id> and checks it against the slot's identity.
func (in *Inbox) attach(pid int, start, id uint64) (*ring, error) {
	if pid <= 0 || start == 0 {
		return nil, fmt.Errorf("attach ring: pid %d start %d: %w", pid, start, ErrCorrupt)
	}
	path := shmseg.Join(in.dir, ringName(in.name, pid, id))
	mem, err := openSegment(path, ringDataOff+MinRingBytes, ringDataOff+MaxRingBytes)
	if err != nil {
		return nil, fmt.Errorf("attach ring: %w", err)
	}
	r, err := newRing(mem)
	if err == nil && (r.pid != pid || r.start != start || r.id != id) {
		err = fmt.Errorf("attach ring %s: header names pid %d start %d id %d: %w", path, r.pid, r.start, r.id, ErrCorrupt)
	}
	if err != nil {
		shmseg.Unmap(mem)
		return nil, err
	}
	r.path = path
	return r, nil
}

// permanent reports whether an attach error is the ring's fault (refused until its slot
// changes) rather than a shortage of ours (retried).
func permanent(err error) bool {
	return !errors.Is(err, unix.EMFILE) && !errors.Is(err, unix.ENFILE) && !errors.Is(err, unix.ENOMEM) &&
		!errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN)
}

// linger marks a ring for detaching once drained.
func (in *Inbox) linger(r *ring) {
	r.lingering = true
	in.lingering++
}

// detach removes r: tells the sender (detached word), unlinks the file, frees the slot when r
// still holds it, and retires the mapping (unmapped once no Pending can see it). The caller
// publishes the new list.
func (in *Inbox) detach(r *ring) {
	if len(r.holds) == 0 {
		in.letGo(r)
	}
	if r.slot >= 0 && in.bySlot[r.slot] == r {
		base := slotTableOff + r.slot*slotSize
		atomic.CompareAndSwapUint64(word64(in.mem, base+slTag), r.tag, freeTag(r.tag))
		in.bySlot[r.slot] = nil
		in.failed[r.slot] = 0
	}
	if r.lingering {
		in.lingering--
	}
	if i := slices.Index(in.rings, r); i >= 0 {
		in.rings = slices.Delete(in.rings, i, i+1)
	}
	if len(r.holds) > 0 {
		// Held records keep the sender off the ring (its detached word would let it reuse the
		// ring for another inbox: ring_pool.go) and the mapping here (hold.go).
		r.zombie = true
		in.zombies = append(in.zombies, r)
	} else {
		in.retired = append(in.retired, r.mem)
	}
	if in.peekRing == r {
		in.peekRing = nil
	}
}

// letGo tells r's sender that the ring is detached and unlinks its file (and its pool name when
// the sender died).
func (in *Inbox) letGo(r *ring) {
	atomic.StoreUint64(word64(r.mem, rgDetached), 1)
	if r.dead {
		unlinkDeadPool(in.dir, r)
	}
	shmseg.Unlink(r.path)
}

// publish makes the attached list visible to Pending and unmaps retired rings nobody can see.
func (in *Inbox) publish() {
	l := slices.Clone(in.rings)
	in.list.Store(&l)
	// A Pending that loaded the old list entered before this load (sequentially consistent
	// atomics): when no method is in flight now, none can still hold a retired mapping.
	if len(in.retired) > 0 && in.readers.Load() == 0 {
		for _, m := range in.retired {
			shmseg.Unmap(m)
		}
		in.retired = in.retired[:0]
	}
}

// Stats returns the counters of every attached ring (a consumer method: the caller serializes
// it with Peek, Pop and Refresh).
func (in *Inbox) Stats() []RingStats {
	if in.closed.Load() {
		return nil
	}
	out := make([]RingStats, 0, len(in.rings))
	for _, r := range in.rings {
		out = append(out, r.stats())
	}
	return out
}

// SumStats adds up the drops, wake-ups and depth (records) of every ring the inbox has, as
// Stats reports them, without allocating (the receive path calls it now and then); zeros once
// the inbox is closed.
func (in *Inbox) SumStats() (drops, wakes, depthRecords uint64) {
	if in.closed.Load() {
		return 0, 0, 0
	}
	for _, r := range in.rings {
		st := r.stats()
		drops += st.Drops
		wakes += st.Wakes
		depthRecords += st.DepthRecords
	}
	return drops, wakes, depthRecords
}

// Close marks the inbox closed (senders see it and get ErrClosed), waits for the concurrent
// methods in flight, unmaps everything, and unlinks the inbox and every ring registered in it.
func (in *Inbox) Close() error {
	if in.closed.Swap(true) {
		return nil
	}
	atomic.StoreUint64(in.closedp, 1)
	for in.readers.Load() != 0 {
		runtime.Gosched()
	}
	// The box goes first, under its lock: a receive of the preload library copying a queued
	// record out of a ring holds that lock, and is done before the ring is unmapped.
	in.closeBox()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, r := range in.rings {
		atomic.StoreUint64(word64(r.mem, rgDetached), 1)
		keep(shmseg.Unlink(r.path))
		keep(shmseg.Unmap(r.mem))
	}
	// Rings registered but never attached: their senders may be gone; names come from numbers.
	for i := range in.slots {
		base := slotTableOff + i*slotSize
		t := atomic.LoadUint64(word64(in.mem, base+slTag))
		if tagIsReady(t) && tagPID(t) > 0 {
			shmseg.Unlink(shmseg.Join(in.dir, ringName(in.name, tagPID(t), atomic.LoadUint64(word64(in.mem, base+slID)))))
		}
	}
	for _, m := range in.retired {
		keep(shmseg.Unmap(m))
	}
	in.closeHolds(keep)
	in.rings, in.retired, in.bySlot, in.peekRing = nil, nil, nil, nil
	keep(shmseg.Unlink(in.path))
	keep(shmseg.Unmap(in.mem))
	in.mem = nil
	if first != nil {
		return fmt.Errorf("close inbox %s: %w", in.name, first)
	}
	return nil
}

// Seal closes the inbox to senders without unmapping it: their next Send fails with ErrClosed
// (they then use the kernel), and a Send already past its closed check has published when Seal
// returns, so the rings hold every datagram that will ever come through them and the owner can
// take them all (a socket that goes back to the kernel at a fork). A sender that died in the
// middle of a Send is waited for at most sealWait.
func (in *Inbox) Seal() {
	if !in.enter() {
		return
	}
	defer in.leave()
	atomic.SwapUint64(in.closedp, 1)
	in.Refresh()
	deadline := time.Now().Add(sealWait)
	for _, r := range in.rings {
		for atomic.LoadUint64(word64(r.mem, rgBusy)) != 0 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
	}
}

// sealWait bounds Seal's wait for senders in the middle of a Send.
const sealWait = 10 * time.Millisecond

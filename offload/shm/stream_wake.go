package shm

import "sync/atomic"

// Wake-ups of stream connections: the inbox protocol of wake.go, per direction, plus its mirror
// image for a writer waiting for space. Three words per direction (the wake line), every access
// a sequentially consistent atomic. The package only says when a wake-up is needed; the caller
// sends it through the kernel (and must tolerate a spurious one: it just checks again).
//
// Data available (the reader sleeps on an empty ring):
//
//	writer, after publishing tail (Write, ShutdownWrite, Close):
//	    if (spinners == 0 || sleepers > 0) && CAS(wakePending, 0, 1) { wake the reader }
//	reader: SpinBegin; poll Read; SpinEnd; SleepBegin; Read (or Readable) once more; if still
//	    empty, sleep; SleepEnd; on a wake-up: ClearWake, then Read.
//
// SleepBegin (a read-modify-write before the last look) plays SpinEnd's part for a reader that
// finds marks of other threads of its process (an epoll set's awake marks): either the writer's
// tail precedes the last look, or the sleepers increment precedes the writer's sleepers load and
// the writer asks for a wake-up (or one is on its way).
//
// This is wake.go's argument unchanged: either the writer's tail store precedes the reader's
// last check (the reader sees the data), or the reader's SpinEnd precedes the writer's spinners
// load, and then either the writer's CAS succeeds or a wake-up is already on its way, after
// which the reader clears the flag and checks again. At most one data wake-up per direction is
// in flight.
//
// Space available (the writer sleeps on a full ring):
//
//	writer: Write returned less than wanted; if !WaitSpace(want) { sleep }; on a wake-up: Write.
//	    WaitSpace stores spaceWait = want, then loads head: ready when want bytes are free.
//	reader, after publishing head (Read, Close):
//	    w := spaceWait; if w != 0 && free >= w && CAS(spaceWait, w, 0) { wake the writer }
//
// No lost wake-up: the writer sleeps only when its head load saw fewer than want free bytes.
// The read that frees them stores head after that load, so in the single order of atomics its
// spaceWait load comes after the writer's store and sees want; free is computed from a tail
// loaded after that, which is the sleeping writer's final tail. want is clamped to the
// capacity, so a reader that drains the ring always wakes a sleeping writer. Clearing the word
// in the CAS makes at most one space wake-up per direction in flight; a writer that
// registered and then found space calls CancelWaitSpace (or gets one spurious wake-up).
//
// Both arguments rest on the single order of a store and the other side's word loaded after it
// (Dekker's pattern): the writer's tail before spinners and wakePending, the reader's
// ClearWake before tail, WaitSpace's spaceWait before head and the peer's state, the reader's
// head before spaceWait. Each of those stores is a read-modify-write (Swap), a full barrier in
// every build; a plain atomic Store is not enough under the race detector, whose atomics on
// memory outside the Go heap are a plain store and load on amd64, reordered by the store
// buffer (wake.go has the story; wake_order_test.go checks every pair).

// wakeReader is the writer's half after publishing (tail or state) in our writing direction;
// it counts the wake-ups it asks for. Called with wmu (or both mutexes) held.
func (c *Conn) wakeReader() bool {
	// A reader thread asleep in the kernel (SleepBegin) gets its wake-up whatever marks other
	// threads of its process hold (an epoll set's awake marks, kept while the thread that waits
	// on the set runs the program).
	if needWake(c.tx.spinners, c.tx.sleepers, c.tx.wakePending) {
		c.dataWakes.Add(1)
		return true
	}
	return false
}

// wakeWriter is the reader's half after publishing head in our reading direction; force (our
// Close) wakes a waiting writer whatever the free space, so it learns that we are gone.
// Called with rmu (or both mutexes) held.
func (c *Conn) wakeWriter(force bool) bool {
	r := &c.rx
	w := atomic.LoadUint64(r.spaceWait)
	if w == 0 {
		return false
	}
	if !force {
		t := atomic.LoadUint64(r.tailp)
		// A tail we cannot judge wakes the writer rather than risk leaving it asleep.
		if t >= r.head && t-r.head <= r.cap && r.cap-(t-r.head) < min(w, r.cap) {
			return false
		}
	}
	if !atomic.CompareAndSwapUint64(r.spaceWait, w, 0) {
		return false
	}
	c.spaceWakes.Add(1)
	return true
}

// SpinBegin tells the peer's writer that one more of our reader threads polls this
// connection: it stops asking for data wake-ups. Pair every SpinBegin with a SpinEnd.
func (c *Conn) SpinBegin() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem != nil {
		atomic.AddInt32(c.rx.spinners, 1)
	}
}

// SpinEnd undoes one SpinBegin; the reader then checks once more (Read or Readable) before it
// sleeps in the kernel.
func (c *Conn) SpinEnd() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem != nil {
		atomic.AddInt32(c.rx.spinners, -1)
	}
}

// ClearWake is called when a data wake-up from the peer arrived through the kernel; the
// reader then checks again (Read).
func (c *Conn) ClearWake() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem != nil {
		atomic.SwapUint32(c.rx.wakePending, 0) // a barrier before the next Read's tail load
	}
}

// WakePending reports whether a data wake-up to our reader is on its way (one atomic load).
func (c *Conn) WakePending() bool {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.mem != nil && atomic.LoadUint32(c.rx.wakePending) != 0
}

// WaitSpace registers our writer as waiting until want bytes are free (clamped to
// [1, capacity]; e.g. the rest of a blocking send, or the kernel's one-third rule for EPOLLOUT)
// and reports whether they already are: when ready the caller writes at once (and may call
// CancelWaitSpace), otherwise it sleeps in the kernel until the peer's reader wakes it. Also
// ready when writing cannot succeed any more (our or the peer's close, reset, a corrupt head):
// Write then says why.
func (c *Conn) WaitSpace(want int) (ready bool) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	t := &c.tx
	if c.mem == nil || t.shut || t.broken {
		return true
	}
	w := uint64(max(want, 1))
	w = min(w, t.cap)
	atomic.SwapUint64(t.spaceWait, w) // a barrier before the head and state loads
	if c.peerState()&(StateClosed|StateReset) != 0 {
		return true
	}
	return t.cap-t.unread() >= w || t.broken
}

// CancelWaitSpace withdraws a WaitSpace that found space, so the peer's reader does not send a
// wake-up nobody waits for.
func (c *Conn) CancelWaitSpace() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.mem != nil {
		atomic.StoreUint64(c.tx.spaceWait, 0)
	}
}

// SleepBegin tells the peer's writer that one more of our reader threads sleeps in the kernel
// on this connection (a blocking receive, select, poll, epoll_wait): it asks for data wake-ups
// whatever spin marks are held. A read-modify-write, so a barrier before the sleeper's last look
// at the ring. Pair every SleepBegin with a SleepEnd on the same Conn; both are no-ops after
// Close (the count goes with the segment).
func (c *Conn) SleepBegin() bool {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem == nil {
		return false
	}
	atomic.AddInt32(c.rx.sleepers, 1)
	return true
}

// SleepEnd undoes one SleepBegin that returned true.
func (c *Conn) SleepEnd() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem != nil {
		atomic.AddInt32(c.rx.sleepers, -1)
	}
}

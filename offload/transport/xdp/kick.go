package xdp

import "sync/atomic"

// Batched kicks. In copy mode (veth, drivers without zero-copy) the kernel sends what waits on a
// TX ring only inside a system call on the AF_XDP socket (a kick), which sends up to 32 frames.
// One kick per datagram costs a system call per datagram; a program that streams datagrams
// can share one kick between up to kickBatch of them. The rules, so that a datagram the program
// sent always leaves without the program's help and a program that does not stream sees no
// delay at all:
//
//   - A send kicks at once unless it is part of a stream: it began less than streamGap after the
//     previous ring send of the process ended, with no other call of the program into the
//     library in between (Flush clears the stream). Ping-pong (send, then receive) never
//     streams; a lone datagram never waits.
//   - A send of a stream posts its frame and leaves the kick to the send that completes a batch
//     of kickBatch frames, to the program's next call of any other kind (the engine calls Flush
//     first: a receive, poll, select, epoll_wait, close, ...), to exit (Shutdown) and fork
//     (BeforeFork), and, whatever the program does next (sleep, block in a call the library does
//     not see, exit), to the Kicker: a thread outside Go that kicks any TX ring whose oldest
//     deferred frame waited its delay. Without a Kicker no kick is deferred.
//   - sendmmsg posts its whole batch and kicks once.

// Kicker kicks deferred TX rings from a thread of its own, which sleeps while no frame waits.
type Kicker interface {
	// Slot registers the AF_XDP socket fd and returns its word: the transport stores there the
	// Nanotime of the oldest frame it left unkicked on the socket's TX ring, and 0 when it
	// kicked them; the kicker kicks fd when that time is older than its delay and clears the
	// word. nil when no slot is left (the socket's sends then kick at once).
	Slot(fd int) *atomic.Int64
	// Release unregisters a slot; after it returns the kicker no longer uses the fd.
	Release(slot *atomic.Int64)
	// Arm tells the kicker that a slot's word was set; it wakes the kicker if it sleeps.
	Arm()
}

const (
	// streamGap: a send that begins within this time after the previous ring send ended, with
	// no other call in between, belongs to a stream (ns).
	streamGap = 10e3
	// kickBatch is how many frames one kick sends in copy mode (the kernel's TX budget).
	kickBatch = 32
)

// streaming tells whether a ring send beginning now is part of a stream; x.txmu is held.
func (e *Env) streaming(x *xsk, now int64) bool {
	return x.slot != nil && e.streak.Load() && now-x.lastEnd < streamGap
}

// postedLocked follows a frame posted on x's TX ring: it kicks now or defers the kick (see the
// rules above); defer forces deferring (a sendmmsg batch, which kicks once at its end, with or
// without a Kicker). x.txmu is held.
func (e *Env) postedLocked(x *xsk, now int64, deferKick bool) {
	x.unkicked++
	if !deferKick || x.unkicked >= kickBatch {
		e.kickLocked(x)
		x.lastEnd = nanotime()
		e.streak.Store(true)
		return
	}
	if !x.dirty {
		x.dirty = true
		e.dirty.Add(1)
	}
	if x.slot != nil && x.slot.Load() == 0 {
		x.slot.Store(now)
		e.p.Kicker.Arm()
	}
	x.lastEnd = now
	if !e.streak.Load() {
		e.streak.Store(true)
	}
}

// kickLocked makes the kernel send what waits on x's TX ring; x.txmu is held.
func (e *Env) kickLocked(x *xsk) {
	if x.slot != nil && x.slot.Load() != 0 {
		x.slot.Store(0) // before the kick: every frame posted so far is in it
	}
	x.s.Kick()
	x.unkicked = 0
	if x.dirty {
		x.dirty = false
		e.dirty.Add(-1)
	}
}

// Flush kicks every TX ring with deferred frames and ends the current stream of sends. The
// engine calls it at the start of every call of the program into the library other than a send
// of this transport, and at exit and fork.
func (e *Env) Flush() {
	if e.streak.Load() {
		e.streak.Store(false)
	}
	if e.dirty.Load() == 0 {
		return
	}
	for _, x := range *e.xsks.Load() {
		x.txmu.Lock()
		if x.dirty {
			e.kickLocked(x)
		}
		x.txmu.Unlock()
	}
}

// kickSlot registers x with the Kicker, if there is one.
func (e *Env) kickSlot(x *xsk) {
	if e.p.Kicker != nil && !x.s.ZeroCopy() {
		x.slot = e.p.Kicker.Slot(x.s.FD())
	}
}

// releaseKickSlot unregisters x from the Kicker (before its fd closes).
func (e *Env) releaseKickSlot(x *xsk) {
	if x.slot != nil {
		e.p.Kicker.Release(x.slot)
		x.slot = nil
	}
}

package shm

import (
	"encoding/binary"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ibToken is the inbox header word holding the inbox's secret token (u64, never 0 once set);
// ibLimit holds the receive-buffer limit senders honour (u64 bytes; 0: the ring's capacity).
const (
	ibToken = 48
	ibLimit = 56
)

// SkbOverhead is what a datagram costs in a receive-buffer limit beyond its record, like the
// kernel's per-packet overhead (truesize) against SO_RCVBUF.
const SkbOverhead = 512

// SetLimit sets the receive-buffer limit: a sender drops a datagram (as a full kernel socket
// buffer does) when its ring's unread records plus SkbOverhead per datagram would exceed it.
func (in *Inbox) SetLimit(bytes int) {
	if !in.enter() {
		return
	}
	defer in.leave()
	atomic.StoreUint64(word64(in.mem, ibLimit), uint64(max(bytes, 0)))
}

// Token returns the inbox's secret: a random non-zero value kept in the inbox header (the
// segment is 0600: only the owner's user can read it). The owner's first call chooses it, before
// the inbox is published; senders put it in their wake datagrams, by which the receiver tells
// them from the program's own datagrams.
func (in *Inbox) Token() uint64 {
	if !in.enter() {
		return 0
	}
	defer in.leave()
	p := word64(in.mem, ibToken)
	if t := atomic.LoadUint64(p); t != 0 {
		return t
	}
	var b [8]byte
	t := uint64(0)
	for t == 0 {
		// getrandom(2) directly: crypto/rand may fall back to opening /dev/urandom, an
		// os.File that would start the Go netpoller inside the program.
		if _, err := unix.Getrandom(b[:], 0); err != nil {
			b = [8]byte{byte(unix.Getpid()), byte(nanotimeToken()), byte(nanotimeToken() >> 8), 1}
		}
		t = binary.LittleEndian.Uint64(b[:])
	}
	if !atomic.CompareAndSwapUint64(p, 0, t) {
		t = atomic.LoadUint64(p)
	}
	return t
}

// WakePending reports whether a wake datagram is on its way to the receiver (one atomic load).
func (in *Inbox) WakePending() bool {
	if !in.enter() {
		return false
	}
	defer in.leave()
	return atomic.LoadUint32(in.wakePending) != 0
}

// Token returns the inbox's token, as Inbox.Token set it (0 if the owner has not yet).
func (o *Outlet) Token() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ibMem == nil {
		return 0
	}
	return atomic.LoadUint64(word64(o.ibMem, ibToken))
}

func nanotimeToken() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Arrivals is a number that grows whenever a datagram arrives in any attached ring (the sum of
// the rings' published tails), for edge-triggered readiness: a changed value means new data.
// Safe from any goroutine.
func (in *Inbox) Arrivals() uint64 {
	if !in.enter() {
		return 0
	}
	defer in.leave()
	var sum uint64
	for _, r := range *in.list.Load() {
		sum += atomic.LoadUint64(r.tailp)
	}
	return sum + atomic.LoadUint64(in.genp)
}

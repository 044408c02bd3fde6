package shm

import (
	"encoding/binary"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ibToken is the inbox header word holding the inbox's secret token (u64, never 0 once set).
const ibToken = 48

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

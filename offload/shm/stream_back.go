package shm

import "sync/atomic"

// Going back to the kernel (fork). A process that forks shares its connections with a child
// that never reads or writes rings, so each direction of a switched connection can go back to
// the kernel connection for good:
//   - the writer stops writing into the ring and records, in the back word of its producer
//     line, how many bytes of its direction it had sent through the kernel connection so far
//     (K, then every wake-up byte) plus one. Its later bytes go through the kernel after those.
//   - the reader reads the ring to its end, discards kernel bytes up to that count (they are
//     wake-ups), and from then on reads only the kernel connection.
//   - a reader asks the writer of its direction to go back by setting the back-request word of
//     the direction's wake line; the writer looks at it before each write (the wake line, which
//     its write reads anyway, not the consumer line: the reader stores its head there at every
//     read, and a look at it per write cost the writer a cache miss, 14% of a 64-byte sender).
//
// Both words are written once (0 -> non-zero) by their owner; the back word is stored after the
// writer's last tail store, so a reader that sees it and then finds the ring empty read all of
// the ring.
const (
	drBack    = 16  // u64 producer line: kernel bytes before the writer went back, +1 (0: not back)
	drBackReq = 280 // u64 wake line: 1 once the reader asked the writer to go back
)

// WriteBack records that the writer of our direction goes back to the kernel connection for
// good: nothing more is written into the ring, and kernelBytes bytes of this direction (K and
// every wake-up) went through the kernel connection before its next byte. The caller must not
// call Write afterwards. A closed Conn ignores it.
func (c *Conn) WriteBack(kernelBytes uint64) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.mem == nil {
		return
	}
	atomic.StoreUint64(word64(c.mem, dirOff(c.side)+drBack), kernelBytes+1)
}

// PeerWriteBack reports whether the peer's writer went back to the kernel, and if so after how
// many kernel bytes of its direction (see WriteBack): once the ring is empty, discard kernel
// bytes up to that count, then read the kernel connection only.
func (c *Conn) PeerWriteBack() (kernelBytes uint64, ok bool) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem == nil {
		return 0, false
	}
	v := atomic.LoadUint64(word64(c.mem, dirOff(1-c.side)+drBack))
	if v == 0 {
		return 0, false
	}
	return v - 1, true
}

// RequestBack asks the peer's writer to go back to the kernel connection (see WriteBack).
func (c *Conn) RequestBack() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem == nil {
		return
	}
	atomic.StoreUint64(word64(c.mem, dirOff(1-c.side)+drBackReq), 1)
}

// BackRequested reports whether the peer's reader asked our writer to go back to the kernel.
func (c *Conn) BackRequested() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.mem == nil {
		return false
	}
	return atomic.LoadUint64(word64(c.mem, dirOff(c.side)+drBackReq)) != 0
}

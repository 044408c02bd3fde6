package shm

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goxio/goxio/internal/shmseg"
)

// StreamState is the state word of one side of a connection: bits that side sets and never
// clears. The peer reads it (PeerState) to decide EOF, EPIPE and ECONNRESET.
type StreamState uint64

const (
	// StateWriteShut: the side will write no more (shutdown SHUT_WR or close); its peer reads
	// EOF once it drained the ring.
	StateWriteShut StreamState = 1 << iota
	// StateReadShut: the side will read no more (shutdown SHUT_RD); informational for its peer,
	// whose writes still succeed while there is space.
	StateReadShut
	// StateClosed: the side closed its end; its peer's writes fail with ErrPeerClosed.
	StateClosed
	// StateReset: the side aborted; its peer discards unread data, its reads and writes fail
	// with ErrReset.
	StateReset

	stateMask = StateWriteShut | StateReadShut | StateClosed | StateReset
)

// Conn is one end of a TCP connection whose bytes flow through a connection segment: two
// single-producer single-consumer byte rings, one per direction, in one shared mapping (layout
// in stream_layout.go). Open it with OpenConn.
//
// Thread safety: every method is safe for concurrent use. Writer methods (Write, SwitchWrite,
// Unread, Space, WaitSpace, CancelWaitSpace, ShutdownWrite) are serialized by one mutex,
// reader methods (Read, Peek, Readable, ReaderSwitch, SpinBegin, SpinEnd, ClearWake,
// WakePending, ShutdownRead) by another, so one reader and one writer run in parallel; the others take
// both. No method blocks or sleeps: when a ring is empty or full it says so, and the caller
// sleeps in the kernel and is woken by the peer through the kernel (stream_wake.go).
type Conn struct {
	wmu sync.Mutex
	tx  txDir // guarded by wmu
	rmu sync.Mutex
	rx  rxDir // guarded by rmu

	// Fields below are set by OpenConn; mem becomes nil (under both mutexes) at Close.
	mem     []byte
	side    int
	name    string
	path    string
	dev     uint64 // identity of our file, for unlinking our own name only
	ino     uint64
	pool    pooled // side 0: the segment as the pool keeps it after Close (conn_pool.go)
	dir     string // side 1: the directory, for the creator's pool name (conn_pool.go)
	token   uint64
	myFlags *uint64 // our side's StreamState word
	peer    *uint64 // the peer's StreamState word
	peerTag *uint64
	peerSt  *uint64

	// The peer's identity, cached once its tag was seen ready (side 0 learns it late).
	peerPID   atomic.Int64
	peerStart atomic.Uint64

	dataWakes  atomic.Uint64 // wake-ups we asked for on behalf of the peer's reader
	spaceWakes atomic.Uint64 // wake-ups we asked for on behalf of the peer's writer
}

// Side returns 0 when this end created the segment, 1 when it attached.
func (c *Conn) Side() int { return c.side }

// Name returns the segment name (ConnName of the connection).
func (c *Conn) Name() string { return c.name }

// Token returns the connection's secret: a random non-zero value the creator stored in the
// header (the segment is 0600: only our user can read it). Both ends get the same value; the
// caller may put it in wake-up messages to recognise them.
func (c *Conn) Token() uint64 { return c.token }

// lockBoth takes the writer and the reader mutex, in that order.
func (c *Conn) lockBoth()   { c.wmu.Lock(); c.rmu.Lock() }
func (c *Conn) unlockBoth() { c.rmu.Unlock(); c.wmu.Unlock() }

// setState ORs bits into our side's state word.
func (c *Conn) setState(s StreamState) { atomic.OrUint64(c.myFlags, uint64(s)) }

// peerState loads the peer's state word (hostile: unknown bits dropped).
func (c *Conn) peerState() StreamState { return StreamState(atomic.LoadUint64(c.peer)) & stateMask }

// PeerState returns the state bits the peer set (0 after Close). One of the two mutexes keeps
// Close (which takes both) away: the reader's, which readiness checks take anyway.
func (c *Conn) PeerState() StreamState {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem == nil {
		return 0
	}
	return c.peerState()
}

// PeerAttached reports whether the peer is in the segment: always true on side 1; on side 0
// true once side 1 attached. Only then may the creator's caller switch its writes to the ring.
func (c *Conn) PeerAttached() bool {
	c.lockBoth()
	defer c.unlockBoth()
	return c.mem != nil && c.learnPeer()
}

// learnPeer caches the peer's pid and start time once its tag is ready.
func (c *Conn) learnPeer() bool {
	if c.peerPID.Load() != 0 {
		return true
	}
	tag := atomic.LoadUint64(c.peerTag)
	if tag&tagReady == 0 || tag>>32 == 0 {
		return false
	}
	c.peerStart.Store(atomic.LoadUint64(c.peerSt))
	c.peerPID.Store(int64(tag >> 32))
	return true
}

// PeerPID returns the peer's process id (0 while side 1 has not attached).
func (c *Conn) PeerPID() int {
	c.lockBoth()
	defer c.unlockBoth()
	if c.mem != nil {
		c.learnPeer()
	}
	return int(c.peerPID.Load())
}

// PeerDead reports whether the peer's process is gone: its pid no longer runs, or now runs a
// process with another start time (a reused pid never looks alive). It reads /proc: call it
// when the kernel connection reports the peer's end closed or reset, not on every poll. False
// while the peer has not attached. Everything the dead peer published stays readable: after
// PeerDead, Read until ErrEmpty to get all of it.
func (c *Conn) PeerDead() bool {
	c.lockBoth()
	if c.mem == nil {
		c.unlockBoth()
		return false
	}
	known := c.learnPeer()
	c.unlockBoth()
	return known && !processAlive(int(c.peerPID.Load()), c.peerStart.Load())
}

// ShutdownWrite marks our write side shut (shutdown SHUT_WR): the peer reads EOF once it
// drained what we wrote; our later Writes fail with ErrClosed. wake reports that the peer's
// reader may sleep and must be woken (as after a Write).
func (c *Conn) ShutdownWrite() (wake bool) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.mem == nil || c.tx.shut {
		return false
	}
	c.tx.shut = true
	c.setState(StateWriteShut)
	return c.wakeReader()
}

// ShutdownRead marks our read side shut (shutdown SHUT_RD): Read returns what is queued, then
// EOF instead of ErrEmpty. The peer's writes still succeed while there is space.
func (c *Conn) ShutdownRead() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.mem == nil || c.rx.shut {
		return
	}
	c.rx.shut = true
	c.setState(StateReadShut)
}

// Close ends our side: the peer reads what we wrote, then EOF; its Writes fail with
// ErrPeerClosed. Data we did not read is dropped with the mapping; a caller that must signal
// that (the kernel resets a connection closed with unread data) calls Abort instead. wake
// reports that the peer may sleep (reading or waiting for space) and must be woken. Close
// unmaps the segment and removes its name if it still names our segment; the memory returns
// to the system when the peer closed too. Later calls fail with ErrClosed or do nothing.
func (c *Conn) Close() (wake bool, err error) { return c.close(StateWriteShut | StateClosed) }

// Abort is Close with reset semantics (close with unread data, SO_LINGER 0): the peer discards
// what it did not read and its Read, Peek and Write fail with ErrReset.
func (c *Conn) Abort() (wake bool, err error) {
	return c.close(StateWriteShut | StateClosed | StateReset)
}

func (c *Conn) close(s StreamState) (bool, error) {
	c.lockBoth()
	defer c.unlockBoth()
	if c.mem == nil {
		return false, nil
	}
	c.setState(s)
	wake := c.wakeReader()
	if c.wakeWriter(true) {
		wake = true
	}
	var first error
	keep := false
	if c.side == 0 {
		first = removeOwnName(c.path, c.dev, c.ino)
		if first == nil && c.pool.mem != nil {
			poolPut(c.pool) // reused once side 1 released it (conn_pool.go)
			keep = true
		}
	} else {
		releaseSide1(c.mem, c.dev, c.ino, c.dir) // our last access to the mapping
	}
	if !keep {
		if err := shmseg.Unmap(c.mem); err != nil && first == nil {
			first = err
		}
	}
	c.mem = nil
	c.tx = txDir{}
	c.rx = rxDir{}
	if first != nil {
		return wake, fmt.Errorf("close conn %s: %w", c.name, first)
	}
	return wake, nil
}

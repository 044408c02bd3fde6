// Package transporttest is a fake transport for tests of code that drives transports through the
// contract (offload/iomux, the engine), without LD_PRELOAD, rings or a peer process, in the
// manner of wireguard-go's conn/bindtest: a test makes data arrive (Deliver), takes it (Take),
// and reads what the code under test did to the transport (spin, sleep and awake marks).
//
// An Endpoint sits on a real kernel socket (one end of a socketpair the test owns), as every
// transport does, so that the code under test can poll and sleep on its fd. Two flavours, as the
// real transports have:
//   - datagram (shared-memory and AF_XDP UDP): Poll adds POLLIN while datagrams are queued;
//     sleepers are woken through a doorbell (an eventfd, Bell) that Deliver rings unless a thread
//     spins on the socket and none sleeps; Rang and Quiet empty it.
//   - stream (shared-memory TCP): Poll is the transport's whole answer (POLLIN while bytes are
//     queued, POLLOUT while writable, POLLHUP after End); the wake-up of a sleeper is a byte on the
//     kernel socket (Deliver writes one to the peer end unless a spin mark is held), which Poll
//     drains when nothing is queued. Mark takes spin marks.
package transporttest

import (
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// Endpoint is one fake socket transport.
type Endpoint struct {
	transport.Base

	stream bool
	// FD is the socket's kernel fd (the code under test's side of the socketpair); Peer is the
	// other end, the test's.
	FD, Peer int
	bell     int // eventfd; -1 for a stream

	mu       sync.Mutex
	queued   int  // datagrams or bytes waiting
	writable bool // stream: POLLOUT
	ended    bool // stream: end of input
	arrivals uint64

	spinners atomic.Int32 // Spin(true) without Spin(false)
	marks    atomic.Int32 // marks taken with Mark and not given back
	sleepers atomic.Int32 // Sleep(true) without Sleep(false)
	closed   atomic.Bool
	rang     atomic.Int32 // doorbell writes
	// hidden counts the next Bell calls that answer -1 (HideBell).
	hidden atomic.Int32
}

var _ transport.Endpoint = (*Endpoint)(nil)

// NewDatagram returns a datagram-flavoured endpoint on a new AF_UNIX datagram socketpair.
func NewDatagram() (*Endpoint, error) { return newEndpoint(false) }

// NewStream returns a stream-flavoured endpoint on a new AF_UNIX stream socketpair; it is
// writable.
func NewStream() (*Endpoint, error) { return newEndpoint(true) }

func newEndpoint(stream bool) (*Endpoint, error) {
	typ := unix.SOCK_DGRAM
	if stream {
		typ = unix.SOCK_STREAM
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{stream: stream, FD: fds[0], Peer: fds[1], bell: -1, writable: stream}
	if !stream {
		b, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return nil, err
		}
		e.bell = b
	}
	return e, nil
}

// Close closes the endpoint's fds (the test's part of the code under test's close).
func (e *Endpoint) Close() {
	if !e.closed.CompareAndSwap(false, true) {
		return
	}
	unix.Close(e.FD)
	unix.Close(e.Peer)
	if e.bell >= 0 {
		unix.Close(e.bell)
	}
}

// Deliver makes n datagrams (or bytes) arrive and wakes sleepers as the real transports do.
func (e *Endpoint) Deliver(n int) {
	e.mu.Lock()
	e.queued += n
	e.arrivals += uint64(n)
	e.mu.Unlock()
	e.wake()
}

// wake is the arrival's wake-up: skipped while somebody spins (or holds a mark) and nobody
// sleeps, as peers skip theirs.
func (e *Endpoint) wake() {
	if e.sleepers.Load() == 0 && e.spinners.Load()+e.marks.Load() > 0 {
		return
	}
	if e.stream {
		_, _ = unix.Write(e.Peer, []byte{'w'})
		return
	}
	var one [8]byte
	one[0] = 1
	_, _ = unix.Write(e.bell, one[:])
	e.rang.Add(1)
}

// Take removes up to n queued datagrams (or bytes) and returns how many it took.
func (e *Endpoint) Take(n int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n = min(n, e.queued)
	e.queued -= n
	return n
}

// End marks the end of input of a stream (the peer's FIN) and wakes sleepers.
func (e *Endpoint) End() {
	e.mu.Lock()
	e.ended = true
	e.mu.Unlock()
	e.wake()
}

// SetWritable sets whether a stream reports POLLOUT.
func (e *Endpoint) SetWritable(on bool) {
	e.mu.Lock()
	e.writable = on
	e.mu.Unlock()
}

// Spinners, Marks and Sleepers are the spin calls, marks and sleep calls not yet undone.
func (e *Endpoint) Spinners() int { return int(e.spinners.Load()) }

// Marks is the number of spin marks taken with Mark and not given back.
func (e *Endpoint) Marks() int { return int(e.marks.Load()) }

// Sleepers is the number of threads marked asleep on the endpoint.
func (e *Endpoint) Sleepers() int { return int(e.sleepers.Load()) }

// Kind is KindSHM: the fake stands for a fast transport.
func (e *Endpoint) Kind() transport.Kind { return transport.KindSHM }

// Transfer is not served: the fake has readiness only (data calls fail with EOPNOTSUPP).
func (e *Endpoint) Transfer(transport.Call) (int, syscall.Errno) { return -1, unix.EOPNOTSUPP }

// TransferVia is Transfer, never via the kernel.
func (e *Endpoint) TransferVia(transport.Call) (int, syscall.Errno, bool) {
	return -1, unix.EOPNOTSUPP, false
}

// Poll is the fake's readiness (see the package comment).
func (e *Endpoint) Poll(_ int, events, kernel int16) (int16, bool) {
	if e.closed.Load() {
		return kernel, false
	}
	e.mu.Lock()
	queued, writable, ended := e.queued, e.writable, e.ended
	e.mu.Unlock()
	if !e.stream {
		if events&unix.POLLIN != 0 && queued > 0 {
			return kernel | unix.POLLIN, true
		}
		return kernel, true
	}
	if kernel&unix.POLLIN != 0 && queued == 0 && !ended {
		e.drainWakes()
	}
	var rev int16
	if events&unix.POLLIN != 0 && (queued > 0 || ended) {
		rev |= unix.POLLIN
	}
	if events&unix.POLLOUT != 0 && writable {
		rev |= unix.POLLOUT
	}
	if ended {
		rev |= unix.POLLHUP
	}
	return rev, true
}

// drainWakes reads the wake bytes queued on the kernel socket.
func (e *Endpoint) drainWakes() {
	var b [64]byte
	for {
		if n, err := unix.Read(e.FD, b[:]); n <= 0 || err != nil {
			return
		}
	}
}

// KernelEvents: a stream's wake-ups are kernel POLLIN, whatever was asked; a datagram socket's
// kernel readiness is its own.
func (e *Endpoint) KernelEvents(events int16) int16 {
	if e.stream {
		return events&^unix.POLLOUT | unix.POLLIN
	}
	return events
}

// Arrivals counts every datagram or byte delivered.
func (e *Endpoint) Arrivals(int) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.arrivals
}

// Ended reports End.
func (e *Endpoint) Ended() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended
}

// Spin counts pollers of a datagram endpoint.
func (e *Endpoint) Spin(on bool) {
	if e.stream {
		return
	}
	if on {
		e.spinners.Add(1)
	} else {
		e.spinners.Add(-1)
	}
}

// Mark takes a spin mark on a stream endpoint that has nobody asleep (as shared-memory TCP
// takes none while a thread of ours sleeps); nil otherwise.
func (e *Endpoint) Mark() transport.Mark {
	if !e.stream || e.sleepers.Load() > 0 || e.closed.Load() {
		return nil
	}
	e.marks.Add(1)
	return (*mark)(e)
}

type mark Endpoint

// SpinEnd gives the mark back.
func (m *mark) SpinEnd() { (*Endpoint)(m).marks.Add(-1) }

// Marked reports marks held.
func (e *Endpoint) Marked() bool { return e.stream && e.marks.Load() > 0 }

// Sleep counts sleepers.
func (e *Endpoint) Sleep(on bool) {
	if on {
		e.sleepers.Add(1)
	} else {
		e.sleepers.Add(-1)
	}
}

// Bell is the doorbell of a datagram endpoint, -1 for a stream (and for the calls HideBell
// hides).
func (e *Endpoint) Bell() int {
	if e.closed.Load() || e.hidden.Add(-1) >= 0 {
		return -1
	}
	e.hidden.Store(0)
	return e.bell
}

// HideBell has the next n Bell calls answer -1, as a shared-memory UDP socket that opens its
// inbox (and doorbell) after its first calls does.
func (e *Endpoint) HideBell(n int) { e.hidden.Store(int32(n)) }

// Rang empties the doorbell once nothing is queued.
func (e *Endpoint) Rang() {
	e.mu.Lock()
	empty := e.queued == 0
	e.mu.Unlock()
	if empty {
		e.drainBell()
	}
}

// Quiet empties the doorbell; with news, not while another thread sleeps on the endpoint (as the
// real transports do).
func (e *Endpoint) Quiet(news bool) {
	if !news || e.sleepers.Load() == 0 {
		e.drainBell()
	}
}

// drainBell empties the doorbell.
func (e *Endpoint) drainBell() {
	if e.bell < 0 || e.closed.Load() {
		return
	}
	var b [8]byte
	_, _ = unix.Read(e.bell, b[:])
}

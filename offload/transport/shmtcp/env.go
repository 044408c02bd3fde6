package shmtcp

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/discovery"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
)

// Params are the parameters the transport follows (VMA_* names in conf.Params).
type Params struct {
	Dir string // where segments live (/dev/shm)
	// RxPoll (VMA_RX_POLL): polls of an empty ring before a blocking receive sleeps; -1 forever.
	RxPoll int
	// RxPollOSRatio (VMA_RX_UDP_POLL_OS_RATIO): while spinning, the kernel socket is looked at
	// every N polls (a dead peer, wake-ups); 0: only before sleeping.
	RxPollOSRatio int
	// RingBytes is the smallest ring; a direction gets max(RingBytes, SO_SNDBUF or SO_RCVBUF of
	// the creator), rounded up to a power of two by offload/shm (at most 4 MiB).
	RingBytes int
	// MaxRingBytes caps a direction whatever the socket buffers say (loopback autotuning reports
	// megabytes): a connection costs 4 KiB plus both directions of /dev/shm. 0: 1 MiB.
	MaxRingBytes int
	// AttachGrace: a creator whose peer has not attached this long after Established withdraws
	// at its next call. 0: 100 ms.
	AttachGrace time.Duration
	// PairAfter is how many data calls the connecting end of a connection with a goxio
	// listener makes through the kernel before it makes the connection's segment (late
	// pairing: GoxioPeer). 0: 4.
	PairAfter int
	// Signals returns the calling thread's signal-handler counters; nil: none.
	Signals func() *transport.SigCounters
	// AdoptFD makes a transport fd internal (invisible to the program) and returns its number;
	// ReleaseFD undoes it before the fd is closed. nil: fds stay as they are (tests). The
	// transport's only fds are the per-call duplicates of a kernel socket a sleeping call holds.
	AdoptFD   func(fd int) int
	ReleaseFD func(fd int)
}

// Env is the transport's process-wide state: parameters, network namespace and counters.
type Env struct {
	p     Params
	netns uint64
	log   *zap.Logger
	ctr   envCounters

	pairsOnce sync.Once
	pairs     *ring.Pairs // the pairing table (late pairing); nil when it cannot be opened
}

// envCounters are the process-wide pairing counters (EnvCounts).
type envCounters struct {
	opened, created, attached, failed, withdrawnData, withdrawnGrace, peerWithdrew, late, back atomic.Uint64
}

// EnvCounts are the process's pairing counters.
type EnvCounts struct {
	Opened         uint64 // Established calls that got a segment (created or attached)
	Created        uint64 // of which this process created (side 0)
	Attached       uint64 // of which this process attached to the peer's (side 1)
	Failed         uint64 // OpenConn failed: the connection stayed on the kernel
	WithdrawnData  uint64 // created, never attached: kernel data came from a peer that had not attached
	WithdrawnGrace uint64 // created, never attached within AttachGrace
	PeerWithdrew   uint64 // attached, but the creator withdrew before switching
	Late           uint64 // data calls went to the kernel before Established: never paired
	Back           uint64 // our writes went back to the kernel (a fork, or the peer's)
}

// NewEnv prepares the transport: the network namespace, and a sweep of connection names left
// by dead processes.
func NewEnv(p Params, log *zap.Logger) (*Env, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if p.Dir == "" {
		p.Dir = "/dev/shm"
	}
	if p.RingBytes <= 0 {
		p.RingBytes = 64 << 10
	}
	if p.MaxRingBytes <= 0 {
		p.MaxRingBytes = 1 << 20
	}
	p.MaxRingBytes = max(p.MaxRingBytes, p.RingBytes)
	if p.AttachGrace <= 0 {
		p.AttachGrace = 100 * time.Millisecond
	}
	if p.PairAfter <= 0 {
		p.PairAfter = 4
	}
	ns, err := discovery.NetNS()
	if err != nil {
		return nil, fmt.Errorf("shmtcp env: %w", err)
	}
	if n := ring.SweepConns(p.Dir); n > 0 {
		log.Debug("shmtcp: removed connection names of dead processes", zap.Int("files", n))
	}
	return &Env{p: p, netns: ns, log: log}, nil
}

// Counts returns the process's pairing counters.
func (e *Env) Counts() EnvCounts {
	c := &e.ctr
	return EnvCounts{Opened: c.opened.Load(), Created: c.created.Load(), Attached: c.attached.Load(),
		Failed: c.failed.Load(), WithdrawnData: c.withdrawnData.Load(),
		WithdrawnGrace: c.withdrawnGrace.Load(), PeerWithdrew: c.peerWithdrew.Load(),
		Late: c.late.Load(), Back: c.back.Load()}
}

// NewTCP returns the transport of one TCP socket; nonblock reports its O_NONBLOCK. It carries
// nothing until Established: every call goes to the kernel.
func (e *Env) NewTCP(nonblock func() bool) *TCP {
	return &TCP{env: e, nonblock: nonblock}
}

// pairTable returns the pairing table, opened at the first need; nil when it cannot be (the
// connections of goxio listeners then stay on the kernel).
func (e *Env) pairTable() *ring.Pairs {
	e.pairsOnce.Do(func() {
		p, err := ring.OpenPairs(e.p.Dir, unix.Geteuid(), e.netns)
		if err != nil {
			e.log.Warn("shmtcp: no pairing table, TCP connections stay on the kernel", zap.Error(err))
			return
		}
		e.pairs = p
	})
	return e.pairs
}

// Early returns what the preload library needs to serve connections' early phase
// (shim/preload/early.c): the pairing table (opened now; nil: none, no early phase), the
// connecting end's data calls before pairing, the accepting end's attach grace.
func (e *Env) Early() (*ring.Pairs, int, time.Duration) {
	return e.pairTable(), e.p.PairAfter, e.p.AttachGrace
}

// ringSize is a direction's ring size for a socket buffer of buf bytes.
func (e *Env) ringSize(buf int) int { return min(max(e.p.RingBytes, buf), e.p.MaxRingBytes) }

// Close releases what the process kept for later connections (the segments of closed
// connections it created, offload/shm's pool); call it at exit, after the connections closed.
func (e *Env) Close() { ring.DrainConnPool() }

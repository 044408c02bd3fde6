package xdp

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/offload/xdp/packet"
)

// Params are the parameters the transport follows (VMA_* names in conf.Params).
type Params struct {
	// Interfaces names the interfaces the transport may offload; empty: every Ethernet
	// interface that is up and has an IPv4 or IPv6 address.
	Interfaces []string
	// RxPoll (VMA_RX_POLL): polls of an empty socket before a blocking receive sleeps; -1 forever.
	RxPoll int
	// RxUDPPollOSRatio (VMA_RX_UDP_POLL_OS_RATIO): the kernel socket is read every N polls; 0:
	// only before sleeping and when the kernel woke the receive.
	RxUDPPollOSRatio int
	// TxNonblockedEagains (VMA_TX_NONBLOCKED_EAGAINS): a non-blocking send that finds the TX
	// ring full fails with EAGAIN instead of dropping the datagram.
	TxNonblockedEagains bool
	// QueueLen is how many received datagrams one socket holds (in UMEM) until the program reads
	// them; more are dropped and counted. 0: 128.
	QueueLen int
	// Socket and Program tune the AF_XDP sockets and the steering program.
	Socket  xdp.Config
	Program xdp.Options
	// Signals returns the calling thread's signal-handler counters; nil: none.
	Signals func() *transport.SigCounters
	// Stats, when set, gets one ring slot per AF_XDP socket (frames, bytes, the kernel's XDP
	// statistics), shown by goxio_stats.
	Stats RingSlots
	// AdoptFD makes one of the transport's own fds internal (invisible to the program) and
	// returns its number; ReleaseFD undoes it before the fd is closed. nil: fds stay as they are.
	AdoptFD   func(fd int) int
	ReleaseFD func(fd int)
	// OpenHigh runs open while the numbers below the internal range are held, so that the
	// descriptors a library opens inside it (the netlink socket; cilium/ebpf's maps, program,
	// link and its short-lived probes) land high; MarkFD makes one of them internal where it is.
	// nil: open runs as it is, fds stay as they are.
	OpenHigh func(open func() error) error
	MarkFD   func(fd int)
	// Kicker, when set, lets sends of a stream share kicks of the TX rings (kick.go); nil:
	// every send kicks its TX ring at once.
	Kicker Kicker
}

// Env is the transport's process-wide state: per interface the steering program and the AF_XDP
// sockets of its queues (or why the interface stays with the kernel), the netlink connection and
// neighbour cache, and the table that routes received frames to sockets.
type Env struct {
	p   Params
	log *zap.Logger

	mu     sync.Mutex         // guards the fields below
	ifaces map[int]*iface     // by ifindex, once looked at
	said   map[string]bool    // reasons already logged
	nl     *packet.Conn       // netlink, in the namespace the Env was made in
	neigh  *packet.NeighCache // next hops' MACs
	flows  map[flowKey]int    // sockets per steered (interface, address, port)
	groups map[groupKey]int   // sockets per steered (interface, group, port)
	socks  map[*UDP]struct{}  // sockets with a binding, for the demultiplexing table
	closed bool               // Close happened

	gen   atomic.Uint64              // route generation: cached routes older than it are asked again
	demux atomic.Pointer[demuxTable] // who receives what; replaced as a whole under mu
	xsks  atomic.Pointer[[]*xsk]     // every AF_XDP socket, for the receive path

	nextTxq atomic.Uint32 // spreads sockets over the TX queues

	dirty  atomic.Int32 // AF_XDP sockets with frames posted and not kicked (kick.go)
	streak atomic.Bool  // the last call into the transport was a ring send (kick.go)

	rxUnmatched atomic.Uint64 // steered frames no socket of this process wanted
	rxBad       atomic.Uint64 // steered frames that did not parse
}

type flowKey struct {
	ifindex int
	dst     netip.AddrPort
}

type groupKey struct {
	ifindex int
	group   netip.Addr
	port    uint16
}

// Neighbour cache ages: a resolved next hop is asked again after neighTTL, an unresolved one
// after unresolvedTTL (the kernel is resolving it meanwhile: the cache nudges it).
const (
	neighTTL      = time.Second
	unresolvedTTL = time.Millisecond
)

// NewEnv makes the transport's process state. It opens nothing: the netlink connection is
// opened at the first socket that needs it (in that thread's network namespace, which all
// interfaces the Env uses must be in), and interfaces are attached when a socket first needs
// them, so a program that uses no offloaded UDP socket sees none of the transport's fds.
func NewEnv(p Params, log *zap.Logger) (*Env, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if p.QueueLen <= 0 {
		p.QueueLen = 128
	}
	e := &Env{p: p, log: log, ifaces: map[int]*iface{}, said: map[string]bool{},
		neigh: packet.NewNeighCache(neighTTL, unresolvedTTL, true), flows: map[flowKey]int{},
		groups: map[groupKey]int{}, socks: map[*UDP]struct{}{}}
	e.demux.Store(&demuxTable{})
	e.xsks.Store(&[]*xsk{})
	return e, nil
}

// nlLocked returns the netlink connection, opening it the first time (its socket placed in the
// internal range and marked internal: OpenHigh, MarkFD); e.mu is held.
func (e *Env) nlLocked() (*packet.Conn, error) {
	if e.nl != nil {
		return e.nl, nil
	}
	if e.closed {
		return nil, fmt.Errorf("xdp transport: netlink: environment closed: %w", ErrNotOffloaded)
	}
	var nl *packet.Conn
	open := func() (err error) {
		nl, err = packet.Open()
		return err
	}
	if err := e.openHigh(open); err != nil {
		return nil, fmt.Errorf("xdp transport: %w", err)
	}
	for _, fd := range nl.FDs() {
		e.markFD(fd)
	}
	e.nl = nl
	return nl, nil
}

// Invalidate drops every cached route and neighbour: the engine calls it when it learns that
// routes, addresses, links or neighbours changed.
func (e *Env) Invalidate() {
	e.mu.Lock()
	e.neigh.Invalidate()
	e.mu.Unlock()
	e.gen.Add(1)
}

// Close detaches every steering program and closes every AF_XDP socket and the netlink
// connection. Every UDP of the Env must be closed first (their queued frames live in UMEM).
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.xsks.Store(&[]*xsk{})
	var first error
	for _, ifc := range e.ifaces {
		for _, x := range ifc.queues {
			x.txmu.Lock()
			if x.dirty {
				e.kickLocked(x)
			}
			e.releaseKickSlot(x)
			x.txmu.Unlock()
			e.closeStats(x)
			e.releaseFD(x.s.FD())
		}
		if ifc.prog != nil {
			for _, fd := range ifc.prog.FDs() {
				e.releaseFD(fd)
			}
		}
		if err := ifc.close(); err != nil && first == nil {
			first = err
		}
	}
	if e.nl != nil {
		for _, fd := range e.nl.FDs() {
			e.releaseFD(fd)
		}
		if err := e.nl.Close(); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return fmt.Errorf("xdp transport: close: %w", first)
	}
	return nil
}

// sayOnceLocked logs an interface's fallback reason the first time it is seen, at INFO, or at
// DEBUG when nothing asked for the interface (not configured, not Ethernet).
func (e *Env) sayOnceLocked(key string, quiet bool, msg string, fields ...zap.Field) {
	if e.said[key] {
		return
	}
	e.said[key] = true
	if quiet {
		e.log.Debug(msg, fields...)
		return
	}
	e.log.Info(msg, fields...)
}

func (e *Env) adopt(fd int) int {
	if e.p.AdoptFD != nil {
		return e.p.AdoptFD(fd)
	}
	return fd
}

// openHigh runs open through Params.OpenHigh (the descriptors it opens land in the internal
// range), or as it is without one.
func (e *Env) openHigh(open func() error) error {
	if e.p.OpenHigh != nil {
		return e.p.OpenHigh(open)
	}
	return open()
}

func (e *Env) markFD(fd int) {
	if e.p.MarkFD != nil {
		e.p.MarkFD(fd)
	}
}

func (e *Env) releaseFD(fd int) {
	if fd >= 0 && e.p.ReleaseFD != nil {
		e.p.ReleaseFD(fd)
	}
}

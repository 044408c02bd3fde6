package offload

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/discovery"
	"github.com/goxio/goxio/offload/iomux"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/stats"
)

// Socket is the engine's object for one kernel socket. Several fds may refer to it (dup); it
// lives until the last of them is closed.
type Socket struct {
	// Fixed at creation.
	id     uint64
	domain int
	typ    int // SOCK_STREAM or SOCK_DGRAM, without flags
	proto  int

	// fds are the fds that refer to the socket (usually one), so that a change of the socket's
	// flags touches its fds without a walk over the registry; guarded by the registry lock.
	fds []int

	// born: the engine saw the socket made (socket() or accept with the engine loaded), so every
	// later change of its file flags went through the engine's control calls (not adopted).
	born bool
	// unbound: born by socket() and no call that binds it (bind, connect, listen, a send) has run
	// yet: its local address is its family's wildcard with port 0, known without asking the kernel.
	unbound atomic.Bool

	nonblock atomic.Bool
	// async: the program put the socket in asynchronous mode (O_ASYNC); it uses the kernel for
	// good (async.go).
	async atomic.Bool

	// mux is what select, poll and epoll read of the socket (its transport once it is not the
	// kernel's: s.tr, read without the lock); its address identifies the socket there.
	mux       iomux.Socket
	queueTick atomic.Uint32 // data calls of a stream socket on rings, for publishQueues
	// ksendFD is fd+1 of the fd whose sends to destinations without a goxio receiver the
	// sending trampoline makes itself (forgood.go: KernelSends); 0: none.
	ksendFD atomic.Int32
	// listening is the discovery entry of a listening shared-memory TCP socket (tcppeer.go).
	listening atomic.Pointer[discovery.Handle]
	// decided: a rule decision has been made (role and decision, under mu, are valid) and the
	// transport it gives is in place. Set once, under mu, after the transport; every data call
	// of a UDP sender reads it, and a receive waiting for the decision, without the lock.
	decided atomic.Bool
	// tr is the socket's transport, set under mu (setTransportLocked) and read by every data
	// call without the lock (transport): never nil once the socket is registered.
	tr atomic.Pointer[transport.Endpoint]

	mu sync.Mutex // guards the fields below
	// passthrough: handed to the kernel for good (a rule said os, or offload is disabled): the
	// C-side table no longer sends its calls into Go except to report its close.
	passthrough bool
	role        conf.Role
	decision    conf.Decision
	kind        transport.Kind
	reason      transport.Reason
	local       netip.AddrPort
	remote      netip.AddrPort

	counters Counters
	st       *stats.Socket // the socket's slot in the statistics segment; nil without one
}

// Counters are a socket's traffic counters. Each is incremented atomically by the thread that
// made the call.
type Counters struct {
	RxPackets, RxBytes atomic.Uint64 // data calls that returned data, and the bytes they returned
	TxPackets, TxBytes atomic.Uint64 // data calls that sent, and the bytes they sent
	EAgain             atomic.Uint64 // data calls that failed with EAGAIN
	Errors             atomic.Uint64 // data calls that failed with any other errno
}

// Snapshot is a consistent-enough copy of a socket's state for logs and dumps.
type Snapshot struct {
	FD          int
	ID          uint64
	Proto       string // "udp" or "tcp"
	NonBlocking bool
	Passthrough bool
	Role        string // "" until a rule decision was made
	Decision    string
	Transport   transport.Kind
	Reason      transport.Reason
	Local       netip.AddrPort
	Remote      netip.AddrPort
	RxPackets   uint64
	RxBytes     uint64
	TxPackets   uint64
	TxBytes     uint64
	EAgain      uint64
	Errors      uint64
}

func (s *Socket) protoName() string {
	if s.typ == sockStream {
		return "tcp"
	}
	return "udp"
}

func (s *Socket) snapshot(fd int) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{
		FD: fd, ID: s.id, Proto: s.protoName(), NonBlocking: s.nonblock.Load(), Passthrough: s.passthrough,
		Transport: s.kind, Reason: s.reason, Local: s.local, Remote: s.remote,
		RxPackets: s.counters.RxPackets.Load(), RxBytes: s.counters.RxBytes.Load(),
		TxPackets: s.counters.TxPackets.Load(), TxBytes: s.counters.TxBytes.Load(),
		EAgain: s.counters.EAgain.Load(), Errors: s.counters.Errors.Load(),
	}
	if s.decided.Load() {
		snap.Role = s.role.String()
		snap.Decision = s.decision.String()
	}
	return snap
}

// setTransportLocked gives the socket its transport, of the kind; s.mu is held.
func (s *Socket) setTransportLocked(t transport.Endpoint, kind transport.Kind) {
	s.setTransport(t)
	s.kind, s.reason = kind, transport.ReasonNone
	if t.Kind() != transport.KindOS {
		s.mux.SetRings(t)
	}
}

// setTransport publishes t as the socket's transport (s.mu is held, or the socket is not shared yet).
func (s *Socket) setTransport(t transport.Endpoint) { s.tr.Store(&t) }

// rings is the socket's transport when it is not the kernel's (select, poll and epoll then ask
// it), or nil. A transport that gave up stays the socket's (its queued data is still read).
func (s *Socket) rings() transport.Endpoint {
	return s.mux.Rings()
}

func (s *Socket) isPassthrough() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passthrough
}

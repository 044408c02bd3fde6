package offload

import (
	"net/netip"
	"syscall"

	"go.uber.org/zap"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/transport"
)

// Kernel for good. A socket whose path is the kernel and can never be anything else costs what
// the kernel costs: its fds are flagged WATCH in the C-side table, so the trampolines call libc
// directly and only its close (and dup) still reach the engine, which keeps its statistics slot
// (with the reason) until the last fd goes. kernelForGood is the one place that makes the
// transition once the socket is known to need nothing else of the engine:
//   - a rule says os (decide);
//   - no ring transport serves the socket in this process (shared memory off, IPv6 UDP, a
//     socket in asynchronous mode), decided when its role is (decide), or inherited by an
//     accepted connection (accepted);
//   - a shared-memory TCP connection that never pairs or went back for good: its peer is no goxio
//     listener (tcpConnecting), the peer did not attach within the grace or sent through the
//     kernel first, the segment could not be made, or both directions went back (afterData);
//   - shared with another process at adoption (adopt.go) or with IP options set before the
//     engine came (adoptUDP).
// Listening sockets keep the engine: their accepted connections are registered by it.
//
// Unconnected UDP senders on the shared-memory transport are no candidates (a goxio receiver may
// appear at any destination at any time); their sends to destinations without one skip the
// engine another way (KernelSends).

// kernelForGood hands s to the kernel for good with reason r (kept when the socket already has
// one): the data calls of every fd of s pass through from now on.
func (e *Engine) kernelForGood(s *Socket, r transport.Reason, why string) {
	if e.keepEngine() {
		return
	}
	s.mu.Lock()
	if s.passthrough {
		s.mu.Unlock()
		return
	}
	s.passthrough = true
	s.kind = transport.KindOS
	if s.reason == transport.ReasonNone {
		s.reason = r
	}
	s.publishLocked()
	s.mu.Unlock()
	// A member of the engine's epoll sets stays there (moving it to the program's set would
	// report a new edge to an edge-triggered waiter): its fds keep FlagRing, so epoll_ctl,
	// select and poll still ask the engine, whose answer for it is the kernel socket's. The
	// second look catches an epoll_ctl that added it meanwhile.
	flags := FlagWatch
	if e.mux.Member(&s.mux) {
		flags |= FlagRing
	}
	e.setFlags(s, flags)
	if flags&FlagRing == 0 && e.mux.Member(&s.mux) {
		e.setFlags(s, flags|FlagRing)
	}
	if ce := e.log.Check(zap.DebugLevel, "socket on the kernel for good"); ce != nil {
		ce.Write(zap.Uint64("id", s.id), zap.String("why", why))
	}
}

// keepEngine reports whether sockets keep the engine on the kernel path: the program uses VMA's
// extra API (Config.ExtraAPI; once true, for good).
func (e *Engine) keepEngine() bool {
	if e.extraAPI.Load() {
		return true
	}
	if e.cfg.ExtraAPI != nil && e.cfg.ExtraAPI() {
		e.extraAPI.Store(true)
		return true
	}
	return false
}

// noRingForGoodLocked reports whether s, just decided, can never have a ring: no transport took
// it and it is not a listener (whose accepted connections the engine registers); s.mu is held.
func noRingForGoodLocked(s *Socket) bool {
	return !s.passthrough && s.rings() == nil && !(s.typ == sockStream && s.role == conf.RoleTCPServer && !s.remote.IsValid())
}

// afterData hands a shared-memory TCP socket to the kernel once its data call found it on the
// kernel for good (no segment and none to come).
func (e *Engine) afterData(s *Socket, r transport.Endpoint) {
	if t, ok := r.(transport.Pairing); ok && t.KernelForGood() {
		e.kernelForGood(s, transport.ReasonNoFasterPath, "shared-memory TCP: no goxio peer")
	}
}

// KernelSends is the library's sending trampoline's cache of destinations that have no goxio
// receiver (shim/preload/ksend.c). The engine allows the shortcut per fd once the fd's socket
// sent through the kernel on the shared-memory UDP transport, and drops it when the fd goes.
type KernelSends interface {
	// Allow lets sendto on fd go straight to the kernel for a cached destination, counting into
	// words (the slot's kernel tx packets, bytes, EAGAIN and errors; nil: none).
	Allow(fd int, words *[4]uint64)
	// Drop withdraws Allow and Peer, and the fd's ring route (the shared-memory transport's
	// Params.RingRoute: sends the library makes into a goxio receiver's ring).
	Drop(fd int)
	// Peer records fd's connected peer, the destination of its sends that name none (send,
	// write): they take the shortcut too while it is a cached destination. The zero value: none.
	Peer(fd int, peer netip.AddrPort)
}

// allowKernelSends lets the sending trampoline shortcut fd's sends to destinations without a
// goxio receiver, after a send of fd went to the kernel through the shared-memory UDP transport
// (the socket is bound and decided; the transport's route said kernel): sendto naming its
// destination, and on a connected socket send and write (its peer, recorded here).
func (e *Engine) allowKernelSends(s *Socket, c *transport.Call, os bool, errno syscall.Errno) {
	named := c.Op == transport.OpSendto && c.A[3] != 0
	if e.cfg.KSend == nil || e.cfg.XDP != nil || !os || errno != 0 || s.typ != sockDgram ||
		(c.Op != transport.OpSendto && c.Op != transport.OpWrite) {
		return
	}
	s.mu.Lock()
	shm, peer := s.kind == transport.KindSHM, s.remote
	s.mu.Unlock()
	if !shm || (!named && !peer.IsValid()) {
		return
	}
	if s.ksendFD.Load() != int32(c.FD)+1 {
		s.ksendFD.Store(int32(c.FD) + 1)
		e.cfg.KSend.Allow(c.FD, s.st.TxKernelWords())
	}
	if !named {
		e.cfg.KSend.Peer(c.FD, peer)
	}
}

// dropKernelSends withdraws the shortcut of fd (closed, replaced, or its socket connected
// elsewhere). Every fd of a datagram socket is dropped, not only the last one allowed: a dup of
// it may have been allowed too, and a number left allowed would hand the next socket that gets
// it the old one's peer and counters.
func (e *Engine) dropKernelSends(fd int, s *Socket) {
	if e.cfg.KSend == nil || s.typ != sockDgram {
		return
	}
	s.ksendFD.CompareAndSwap(int32(fd)+1, 0)
	e.cfg.KSend.Drop(fd)
	if u, ok := s.rings().(interface{ ForgetTx(fd int) }); ok {
		u.ForgetTx(fd)
	}
}

// listenerReadiness drops FlagRing from a listening socket's fds: its readiness is the kernel's
// (accept is), so select and poll on it need not enter the engine (a server that keeps its
// listener in every select, as iperf3 does, paid a trip into Go per wait). A listener already in
// one of the engine's epoll sets keeps it (epoll_ctl on it must still reach the engine).
func (e *Engine) listenerReadiness(s *Socket) {
	if s.typ != sockStream || s.isPassthrough() || e.mux.Member(&s.mux) {
		return
	}
	e.setFlags(s, FlagEngine)
	if e.mux.Member(&s.mux) {
		e.setFlags(s, FlagEngine|FlagRing)
	}
}

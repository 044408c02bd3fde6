package offload

import (
	"syscall"

	"go.uber.org/zap"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/iomux"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
	shmtr "github.com/goxio/goxio/offload/transport/shm"
	"github.com/goxio/goxio/offload/transport/shmtcp"
	xdptr "github.com/goxio/goxio/offload/transport/xdp"
	"github.com/goxio/goxio/stats"
)

// The transports this engine knows, and the one place that names them: their process state
// (Config), which socket gets which, and their construction. Everywhere else the engine holds a
// socket's transport as a transport.Endpoint (offload/transport/contract.go).

// Config is what the engine needs from the process and its parameters.
type Config struct {
	Rules   *conf.RuleSet // nil: no rules, everything may be offloaded
	Program string        // the program's name, matched against application-id sections
	AppID   string        // VMA_APPLICATION_ID
	// Offload is VMA_OFFLOADED_SOCKETS: when false, new sockets are handed to the kernel at once.
	Offload bool
	Table   FDTable
	Log     *zap.Logger   // nil: no logging
	Stats   *stats.Writer // nil: no statistics segment
	// SHM is the shared-memory transport's process state; nil: no shared-memory transport (every
	// offloaded socket stays on the kernel, reason "no faster path").
	SHM *shmtr.Env
	// SHMTCP is the shared-memory TCP transport's process state; nil: TCP stays on the kernel.
	SHMTCP *shmtcp.Env
	// XDP is the AF_XDP transport's process state; nil: no AF_XDP transport (xdp.go).
	XDP *xdptr.Env
	// IOMux are the select/poll/epoll parameters.
	IOMux IOMux
	// KSend is the sending trampoline's cache of destinations without a goxio receiver; nil:
	// every send of a ring socket enters the engine (forgood.go).
	KSend KernelSends
	// EarlyListener tells the preload library that fd, a listener of domain, is published:
	// its connections pair late, and their early phase may run in C (shim/preload/early.c).
	// nil: none do.
	EarlyListener func(fd, domain int)
	// PlainListener tells the preload library that the connections fd, a listener, accepts are
	// the kernel's for good from the start (it has no ring transport, nor will they): accept
	// makes them plain fds without entering the engine. nil: every accept enters it.
	PlainListener func(fd int)
	// ExtraAPI reports whether the program was handed VMA's extra API; nil: never. Its members
	// serve the engine's sockets only, so sockets then keep the engine on the kernel path
	// instead of passing through for good (forgood.go; a rule os still hands them over).
	ExtraAPI func() bool
}

// kernelTransport is the transport of every socket until a rule decision gives it another.
func kernelTransport() transport.Endpoint { return kernel.Transport{} }

// kernelDo makes a call on the kernel socket as libc would (control calls always are).
func kernelDo(c *transport.Call) (int, syscall.Errno) { return kernel.Do(c) }

// udpRings reports whether UDP sockets may get a ring transport (select, poll and epoll then
// look at their rings).
func (e *Engine) udpRings() bool { return e.cfg.SHM != nil || e.cfg.XDP != nil }

// tcpRings reports whether TCP sockets may get a ring transport.
func (e *Engine) tcpRings() bool { return e.cfg.SHMTCP != nil }

// offloadTCPLocked gives an offloaded TCP socket the shared-memory transport (once); s.mu is
// held. AF_INET6 sockets are served too: the kernel connection keeps every address-returning
// call (accept, getsockname, getpeername) the kernel's, and both ends name their segment with
// v4-mapped addresses unmapped (offload/shm/conn_name.go), so a dual-stack end pairs with an
// IPv4 one exactly when the kernel connected them. A connection accepted on such a listener gets one of its own (offloadAcceptedLocked).
func (e *Engine) offloadTCPLocked(s *Socket) bool {
	if e.cfg.SHMTCP == nil || s.typ != sockStream || !inetDomain(s.domain) {
		return false
	}
	if s.rings() == nil {
		t := e.cfg.SHMTCP.NewTCP(s.nonblock.Load)
		if s.role == conf.RoleTCPServer {
			t.Accepted() // a server's connection (one adopted after its listener went; statistics)
		}
		s.setTransportLocked(t, transport.KindSHM)
	}
	s.kind, s.reason = transport.KindSHM, transport.ReasonNone
	return true
}

// offloadAcceptedLocked gives a connection accepted on a listener with the transport lr its own
// transport; s is not shared yet. published: the listener is in the discovery directory, so
// goxio connecting ends register their connections to it in the pairing table.
func (e *Engine) offloadAcceptedLocked(s *Socket, lr transport.Endpoint, published bool) {
	if _, ok := lr.(*shmtcp.TCP); !ok || e.cfg.SHMTCP == nil {
		return
	}
	t := e.cfg.SHMTCP.NewTCP(s.nonblock.Load)
	t.Accepted()
	if published {
		t.Ends(s.local, s.remote) // its goxio peers registered in the pairing table: it pairs late
	}
	s.setTransportLocked(t, s.kind)
}

// offloadUDPLocked gives an offloaded UDP socket a ring transport (once): the AF_XDP one when
// useXDPLocked says so, else the shared-memory one; s.mu is held.
func (e *Engine) offloadUDPLocked(s *Socket) {
	if !e.udpRings() || s.typ != sockDgram || !inetDomain(s.domain) {
		s.kind, s.reason = transport.KindOS, transport.ReasonNoFasterPath
		return
	}
	if s.rings() != nil {
		return
	}
	// An AF_INET6 socket (dual-stack or not) may take either: the shared-memory records and the
	// AF_XDP queue both give the source as the receiver's family has it (sockaddr_in6, IPv4
	// mapped, the scope id of a link-local source).
	if e.useXDPLocked(s) {
		e.offloadXDPLocked(s)
		return
	}
	if e.cfg.SHM == nil {
		s.kind, s.reason = transport.KindOS, transport.ReasonNoFasterPath
		return
	}
	u := e.cfg.SHM.NewUDP(s.nonblock.Load)
	st := s.st
	u.OnDrop = func() { st.CountTxDrop() }
	u.Domain = s.domain
	if w := st.TxKernelWords(); w != nil {
		u.KernelTx = &w[0]
	}
	u.TxRing = st.TxRingWords()
	u.RxKernel = st.RxKernelWords()
	s.setTransportLocked(u, transport.KindSHM)
}

// useXDPLocked chooses the AF_XDP transport for an offloaded UDP socket whose role, local
// address and peer were just decided; s.mu is held. With only one ring transport configured
// that one serves every socket; with both, the AF_XDP transport takes the sockets whose traffic
// leaves through an interface it offloads (the route to the peer, or the interface of a
// specific bound address) and the shared-memory one everything else (wildcard and loopback
// receivers, same-host peers).
func (e *Engine) useXDPLocked(s *Socket) bool {
	if e.cfg.XDP == nil {
		return false
	}
	if e.cfg.SHM == nil {
		return true
	}
	return e.cfg.XDP.Serves(s.local, s.remote)
}

// offloadXDPLocked gives the socket the AF_XDP transport; s.mu is held. If the transport finds
// that it cannot steer the socket's traffic (the interface is busy with another XDP program,
// capabilities are missing, no offloaded interface has its address), the socket goes back to
// the kernel with that reason (fallback).
func (e *Engine) offloadXDPLocked(s *Socket) {
	u := e.cfg.XDP.NewUDP(s.nonblock.Load)
	u.Domain = s.domain
	st := s.st
	u.OnRxDrop = func(bytes int) { st.CountRxDrop(bytes) }
	u.OnTxDrop = func() { st.CountTxDrop() }
	u.OnFallback = func(err error) { e.fallback(s, u, xdptr.FallbackReason(err), err) }
	s.setTransportLocked(u, transport.KindXDP)
}

// fallback sends a socket whose transport r cannot serve it back to the kernel for good: err
// says why (logged once per interface by the transport).
func (e *Engine) fallback(s *Socket, r transport.Endpoint, why transport.Reason, err error) {
	r.GiveUp(why)
	s.mu.Lock()
	if s.transport() == r {
		s.kind, s.reason = transport.KindOS, why
		s.publishLocked()
	}
	s.mu.Unlock()
	e.log.Debug("socket back to the kernel", zap.Stringer("reason", why), zap.Error(err))
}

// xdpFlush makes the kernel send the datagrams the AF_XDP transport's sends left on TX rings to
// share a kick, before any call other than a send: a receive (ping-pong), a wait, a close.
func (e *Engine) xdpFlush(c *transport.Call) {
	if e.cfg.XDP != nil && !c.Op.Send() {
		e.cfg.XDP.Flush()
	}
}

// xdpBeforeFork sends the AF_XDP transport's sockets the engine did not reach back to the
// kernel (the engine's BeforeFork handed its own over already).
func (e *Engine) xdpBeforeFork() {
	if e.cfg.XDP != nil {
		e.cfg.XDP.Flush()
		e.cfg.XDP.BeforeFork()
	}
}

// xdpShutdown makes the kernel send the datagrams left on TX rings to share a kick and publishes
// the AF_XDP rings' statistics a last time at exit. The steering programs and AF_XDP sockets
// are left to the kernel, which releases them when the process's fds close (as after SIGKILL):
// other threads may still be using the rings.
func (e *Engine) xdpShutdown() {
	if e.cfg.XDP != nil {
		e.cfg.XDP.Flush()
		e.cfg.XDP.PublishStats()
	}
}

// shmClose closes the shared-memory transport's process state at exit (its sockets are
// finished).
func (e *Engine) shmClose() {
	if e.cfg.SHM != nil {
		e.cfg.SHM.Close()
	}
}

// IOMux are the parameters of select, poll and epoll over ring sockets.
type IOMux = iomux.Params

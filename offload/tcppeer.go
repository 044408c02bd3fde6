package offload

import (
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// Whether a TCP peer is a goxio process, known before any connection segment is made. A
// shared-memory TCP socket that listens publishes itself in the discovery directory; a
// connecting socket whose remote address is no such listener (a program without goxio, a
// listener whose rule is os, a host elsewhere) stays on the kernel for good without opening a
// segment: a connection per request to a server without goxio costs no file, no mapping and no
// option reads. A connection to a goxio listener pairs as before (its first data call opens the
// segment). Accepted connections are not judged here: their peer's port is not published.

// tcpListening publishes a shared-memory TCP socket that has just listened (once; a second
// listen(2) only changes the backlog); one without rings is marked for the library instead
// (plainListener).
func (e *Engine) tcpListening(s *Socket, fd int) {
	e.plainListener(s, fd)
	if _, ok := s.rings().(transport.Pairing); !ok || e.cfg.SHM == nil || s.listening.Load() != nil {
		return
	}
	local := localAddr(fd)
	if !local.IsValid() {
		return
	}
	v6only := false
	if s.domain == unix.AF_INET6 {
		on, err := sysc.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
		if err != nil {
			return // not published: its connections stay on the kernel
		}
		v6only = on != 0
	}
	h, err := e.cfg.SHM.PublishListener(s.domain, v6only, local)
	if err != nil {
		e.log.Info("shmtcp: listener not published, its connections stay on the kernel", zap.Int("fd", fd), zap.Error(err))
		return
	}
	if !s.listening.CompareAndSwap(nil, &h) {
		h.Withdraw() // another thread's listen published first
	}
	if e.cfg.EarlyListener != nil && e.cfg.SHMTCP != nil && !e.keepEngine() {
		e.cfg.EarlyListener(fd, s.domain) // accept may run in C (shim/preload/early.c)
	}
}

// plainListener tells the preload library that fd, a listener without a ring transport, accepts
// connections that are the kernel's for good, as accepted would find them: a connection per
// request to such a server then costs no trip into the engine at accept (measured with
// GOXIO_SHM_TCP=0 on both ends and on one CPU: 1.15x the kernel's round, 9% of the CPU in Go,
// most of it each connection's statistics slot). They have no slot of their own; the global count
// of sockets made plain counts them, as it counts the connections late.c makes plain.
func (e *Engine) plainListener(s *Socket, fd int) {
	if e.cfg.PlainListener == nil || s.typ != sockStream || e.keepEngine() {
		return
	}
	s.mu.Lock()
	plain := s.rings() == nil && s.isDecided()
	s.mu.Unlock()
	if plain {
		e.cfg.PlainListener(fd)
	}
}

// tcpUnlisten withdraws the listener entry of a socket whose last fd is gone.
func (e *Engine) tcpUnlisten(s *Socket) {
	if h := s.listening.Swap(nil); h != nil {
		h.Withdraw()
	}
}

// tcpConnecting judges a TCP socket whose connect the kernel accepted (done or in progress):
// the listener it reached exists now, and, when it is no goxio listener, the connection never
// pairs (judged now, not at the first data call: the listener may close before that).
func (e *Engine) tcpConnecting(s *Socket) {
	t, ok := s.rings().(transport.Pairing)
	if !ok || e.cfg.SHM == nil {
		return
	}
	s.mu.Lock()
	local, remote := s.local, s.remote
	s.mu.Unlock()
	if e.cfg.SHM.GoxioListener(remote) && t.GoxioPeer(local, remote) {
		return
	}
	t.NoPeer()
	e.kernelForGood(s, transport.ReasonNoFasterPath, "shared-memory TCP: the peer is no goxio listener")
	if ce := e.log.Check(zap.DebugLevel, "shmtcp: the peer is no goxio listener, the connection stays on the kernel"); ce != nil {
		ce.Write(zap.Stringer("remote", remote))
	}
}

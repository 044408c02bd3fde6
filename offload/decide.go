package offload

import (
	"net/netip"

	"go.uber.org/zap"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/transport"
)

// decide matches the socket's role, known at this moment (bind, listen, connect, first send),
// against the rules. A rule that says os hands the socket to the kernel for good; otherwise the
// socket keeps its transport. The kernel transport is today's only one: an offloaded socket
// whose peer no faster transport reaches stays on it, with that reason recorded.
func (e *Engine) decide(s *Socket, fd int, role conf.Role, local, remote netip.AddrPort) {
	d := e.section().Match(role, local, remote)
	s.mu.Lock()
	s.role, s.decision = role, d
	s.local = local
	if remote.IsValid() {
		s.remote = remote
	}
	if d.Target == conf.TargetOS {
		s.passthrough = true
		s.reason = transport.ReasonRule
	} else if s.asyncMode(fd) {
		s.kind, s.reason = transport.KindOS, transport.ReasonUnsupported // async.go
	} else if !e.offloadTCPLocked(s) {
		e.offloadUDPLocked(s)
	}
	// decided is set once the transport is chosen: a blocking receive that waits for the
	// decision without the lock (udpWaitInbox) must find the socket's rings when it sees it,
	// or it would sleep in the kernel, where ring datagrams never arrive.
	s.decided.Store(true)
	handOver := s.passthrough
	forGood := noRingForGoodLocked(s)
	s.publishLocked()
	s.mu.Unlock()
	if ce := e.log.Check(zap.DebugLevel, "decision"); ce != nil {
		ce.Write(zap.Int("fd", fd), zap.Stringer("role", role), zap.Stringer("local", local),
			zap.Stringer("remote", remote), zap.Stringer("result", d))
	}
	if handOver {
		if r := s.rings(); r != nil {
			r.GiveUp(transport.ReasonRule)
		}
		e.handOver(s)
		e.mux.HandOver(&s.mux)
	} else if forGood {
		e.kernelForGood(s, transport.ReasonNoFasterPath, "no ring transport for the socket")
	}
}

// section is the application-id section that decides for this process (nil: none, offload).
func (e *Engine) section() *conf.Section {
	e.sectionOnce.Do(func() { e.sect.Store(e.cfg.Rules.For(e.cfg.Program, e.cfg.AppID)) })
	return e.sect.Load()
}

// handOver gives every fd of s to the kernel: from now on the trampolines call libc directly,
// and only report the fds' close.
func (e *Engine) handOver(s *Socket) { e.setFlags(s, FlagWatch) }

// setFlags sets the table flags of every fd of s.
func (e *Engine) setFlags(s *Socket, flags uint8) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	for _, fd := range s.fds {
		e.cfg.Table.Set(fd, flags)
	}
}

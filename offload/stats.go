package offload

import (
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/stats"
)

// openStats gives a new socket its slot in the statistics segment (none when the segment is off
// or full: every stats method accepts a nil slot).
func (e *Engine) openStats(fd int, s *Socket) {
	st := e.cfg.Stats.Open(fd)
	if st == nil {
		return
	}
	// The inode stays 0: the reader reads it from /proc/PID/fd (an fstat per socket would be a
	// system call on the path of a socket per request).
	st.SetInfo(stats.SocketInfo{Family: s.domain, Type: s.typ, Protocol: s.proto, Blocking: !s.nonblock.Load()})
	s.mu.Lock()
	s.st = st
	s.publishLocked()
	s.mu.Unlock()
}

// publishLocked copies the socket's decision state into its statistics slot; s.mu is held.
func (s *Socket) publishLocked() {
	if s.st == nil {
		return
	}
	s.st.SetAddrs(s.local, s.remote)
	kind, reason := s.kind, s.reason
	if s.passthrough {
		kind = transport.KindOS
	}
	s.st.SetTransport(statsTransport(kind), statsReason(reason))
	if s.decided.Load() && s.decision.Rule != nil {
		s.st.SetRule(s.decision.Rule.Line, s.decision.Rule.Text)
	}
	if s.typ == sockStream && s.remote.IsValid() {
		s.st.SetState(stats.TCPEstablished)
	}
}

func (s *Socket) setNonblock(on bool) {
	s.nonblock.Store(on)
	s.st.SetBlocking(!on)
	if w, ok := s.transport().(transport.NonblockWatcher); ok {
		w.NonblockChanged()
	}
}

func statsTransport(k transport.Kind) stats.Transport {
	switch k {
	case transport.KindSHM:
		return stats.TransportSHM
	case transport.KindXDP:
		return stats.TransportXDP
	}
	return stats.TransportOS
}

func statsReason(r transport.Reason) stats.Reason {
	switch r {
	case transport.ReasonRule:
		return stats.ReasonRule
	case transport.ReasonNoFasterPath:
		return stats.ReasonNoFasterPath
	case transport.ReasonUnsupported:
		return stats.ReasonUnsupportedOption
	case transport.ReasonResources:
		return stats.ReasonResources
	case transport.ReasonDisabled:
		return stats.ReasonDisabled
	case transport.ReasonForkedChild:
		return stats.ReasonForkedChild
	case transport.ReasonInterfaceBusy:
		return stats.ReasonInterfaceBusy
	case transport.ReasonNoCapabilities:
		return stats.ReasonNoCapabilities
	case transport.ReasonNoXDP:
		return stats.ReasonNoXDP
	case transport.ReasonUnsupportedProtocol:
		return stats.ReasonUnsupportedProtocol
	}
	return stats.ReasonNone
}

package offload

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/stats"
)

// control performs a call that moves no data. The kernel socket always makes the call (it owns
// the port, the connection and the options); the engine then records what the call taught it:
// a role (bind, listen, connect), a new fd (accept, F_DUPFD), the blocking mode.
func (e *Engine) control(s *Socket, c *transport.Call) int64 {
	r := s.rings()
	if r != nil {
		switch {
		case c.Op == transport.OpIoctl && (uint32(c.A[0]) == unix.SIOCINQ || uint32(c.A[0]) == unix.SIOCOUTQ):
			// FIONREAD (SIOCINQ) and SIOCOUTQ from the transport's queues once it has them.
			if v, ok := r.Ioctl(c.FD, uint32(c.A[0])); ok {
				return writeInt32(c.A[1], int32(v))
			}
		case c.Op == transport.OpShutdown:
			r.Shutdown(c.FD, int(int32(c.A[0])))
		}
	}
	n, errno := kernelDo(c)
	switch c.Op {
	case transport.OpBind, transport.OpConnect, transport.OpListen:
		s.unbound.Store(false) // whatever the result: the kernel may have bound it
	}
	if r != nil && errno == 0 {
		switch c.Op {
		case transport.OpSetsockopt:
			r.OptionSet(c.FD, int(int32(c.A[0])), int(int32(c.A[1])))
		case transport.OpGetsockopt:
			optionValue(r, int(int32(c.A[0])), int(int32(c.A[1])), c.A[2], c.A[3])
		}
	}
	if errno == 0 && asyncCall(c) {
		e.asyncOn(s)
	}
	switch c.Op {
	case transport.OpBind:
		if errno == 0 && s.typ == sockDgram {
			e.decide(s, c.FD, conf.RoleUDPReceiver, s.localAddr(c.FD), remoteNone)
			e.udpBound(s, c.FD)
		}
	case transport.OpListen:
		if errno == 0 {
			s.st.SetState(stats.TCPListen)
			e.decide(s, c.FD, conf.RoleTCPServer, s.localAddr(c.FD), remoteNone)
			e.tcpListening(s, c.FD)
			e.listenerReadiness(s)
		}
	case transport.OpConnect:
		if errno == 0 || errno == unix.EINPROGRESS {
			if remote := sysc.SockaddrIn(c.A[0], uint32(c.A[1])); remote.IsValid() {
				role := conf.RoleTCPClient
				if s.typ == sockDgram {
					role = conf.RoleUDPConnect
				}
				e.decide(s, c.FD, role, s.localAddr(c.FD), remote)
				if s.typ == sockDgram {
					e.udpConnected(s, c.FD, remote)
				} else {
					e.tcpConnecting(s)
				}
			} else if errno == 0 && s.typ == sockDgram {
				e.udpConnected(s, c.FD, remoteNone) // AF_UNSPEC: disconnected
			}
		}
	case transport.OpSetsockopt:
		if errno == 0 && s.typ == sockDgram {
			e.udpOption(s, c.FD, int(int32(c.A[0])), int(int32(c.A[1])), c.A[2], uint32(c.A[3]))
		}
	case transport.OpAccept4:
		if errno == 0 {
			e.accepted(s, n, int(int32(c.A[2])), true)
		}
	case transport.OpFcntl:
		if errno == 0 {
			switch int(int32(c.A[0])) {
			case unix.F_SETFL:
				s.setNonblock(int(c.A[1])&unix.O_NONBLOCK != 0)
			case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC:
				e.dup(s, n)
			}
		}
	case transport.OpIoctl:
		if errno == 0 && uint32(c.A[0]) == fionbio {
			s.setNonblock(sysc.IntAt(c.A[1]) != 0)
		}
	}
	return result(n, errno)
}

// accepted registers a connection the kernel accepted on the listening socket l: it shares the
// listener's decision. born: accept returned it through the engine just now (O_ASYNC is not
// inherited from the listener), rather than adopted.
func (e *Engine) accepted(l *Socket, fd, flags int, born bool) {
	if uint(fd) >= FDTableSize {
		return
	}
	l.mu.Lock()
	s := &Socket{id: e.nextID.Add(1), domain: l.domain, typ: l.typ, proto: l.proto, kind: l.kind,
		reason: l.reason, role: l.role, decision: l.decision, passthrough: l.passthrough,
		local: sysc.Sockname(fd), remote: sysc.Peername(fd), born: born}
	s.setTransport(e.os)
	s.decided.Store(l.decided.Load())
	s.mux.Stream = l.mux.Stream
	lr := l.rings()
	l.mu.Unlock()
	s.nonblock.Store(flags&unix.SOCK_NONBLOCK != 0)
	if lr != nil {
		e.offloadAcceptedLocked(s, lr, l.listening.Load() != nil) // not shared yet: no lock needed
	} else if s.decided.Load() && !e.keepEngine() {
		// The listener has no ring transport, nor will its connections: the kernel's for good
		// from the start (forgood.go).
		s.passthrough = true
		if s.reason == transport.ReasonNone {
			s.reason = transport.ReasonNoFasterPath
		}
	}
	e.openStats(fd, s)
	e.register(fd, s)
}

// fionbio is the FIONBIO ioctl request (asm-generic value, used by x86-64 and arm64).
const fionbio = 0x5421

// writeInt32 stores v at the program's address p: 0, or -EFAULT.
func writeInt32(p uintptr, v int32) (r int64) {
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			r = -int64(unix.EFAULT)
		}
	}()
	*umem.Int32(p) = v
	return 0
}

// optionValue lets the transport correct the option value getsockopt read from the kernel into
// the program's buffer val, of the length at lenp (the kernel checked both).
func optionValue(r transport.Endpoint, level, name int, val, lenp uintptr) {
	if val == 0 || lenp == 0 {
		return
	}
	umem.Protect()
	defer func() { umem.Fault(recover()) }()
	r.OptionValue(level, name, umem.Bytes(val, int(min(*umem.Uint32(lenp), 4))))
}

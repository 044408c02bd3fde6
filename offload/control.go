package offload

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
	"github.com/goxio/goxio/stats"
)

// control performs a call that moves no data. The kernel socket always makes the call (it owns
// the port, the connection and the options); the engine then records what the call taught it:
// a role (bind, listen, connect), a new fd (accept, F_DUPFD), the blocking mode.
func (e *Engine) control(s *Socket, c *transport.Call) int64 {
	if c.Op == transport.OpIoctl && uint32(c.A[0]) == fionread && s.typ == sockDgram {
		if r, ok := e.ringFionread(s, c.A[1]); ok {
			return r
		}
	}
	if s.typ == sockStream {
		if c.Op == transport.OpIoctl {
			if r, ok := e.tcpIoctl(s, c); ok {
				return r
			}
		}
		e.tcpBefore(s, c)
	}
	n, errno := kernel.Do(c)
	if s.typ == sockStream {
		e.tcpAfter(s, c, uintptr(errno))
	}
	switch c.Op {
	case transport.OpBind:
		if errno == 0 && s.typ == sockDgram {
			e.decide(s, c.FD, conf.RoleUDPReceiver, localAddr(c.FD), remoteNone)
			e.udpBound(s, c.FD)
		}
	case transport.OpListen:
		if errno == 0 {
			s.st.SetState(stats.TCPListen)
			e.decide(s, c.FD, conf.RoleTCPServer, localAddr(c.FD), remoteNone)
			e.tcpListening(s, c.FD)
		}
	case transport.OpConnect:
		if errno == 0 || errno == unix.EINPROGRESS {
			if remote := sysc.SockaddrIn(c.A[0], uint32(c.A[1])); remote.IsValid() {
				role := conf.RoleTCPClient
				if s.typ == sockDgram {
					role = conf.RoleUDPConnect
				}
				e.decide(s, c.FD, role, localAddr(c.FD), remote)
				if s.typ == sockDgram {
					e.udpConnected(s, c.FD, remote)
				} else {
					e.tcpConnecting(s)
				}
			} else if errno == 0 && s.typ == sockDgram {
				e.udpConnected(s, c.FD, remoteNone) // AF_UNSPEC: disconnected
			}
		}
	case transport.OpShutdown:
		if (errno == 0 || errno == unix.ENOTCONN) && s.typ == sockDgram && int(int32(c.A[0])) != unix.SHUT_RD {
			if u := s.ringUDP(); u != nil {
				u.ShutWrite()
			}
		}
	case transport.OpSetsockopt:
		if errno == 0 && s.typ == sockDgram {
			e.udpOption(s, c.FD, int(int32(c.A[0])), int(int32(c.A[1])), c.A[2], uint32(c.A[3]))
		}
	case transport.OpGetsockopt:
		if errno == 0 && s.typ == sockDgram {
			e.udpOptionValue(s, int(int32(c.A[0])), int(int32(c.A[1])), c.A[2], c.A[3])
		}
	case transport.OpAccept4:
		if errno == 0 {
			e.accepted(s, n, int(int32(c.A[2])))
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
// listener's decision.
func (e *Engine) accepted(l *Socket, fd, flags int) {
	if uint(fd) >= FDTableSize {
		return
	}
	l.mu.Lock()
	s := &Socket{id: e.nextID.Add(1), domain: l.domain, typ: l.typ, proto: l.proto, tr: l.tr, kind: l.kind,
		reason: l.reason, role: l.role, decided: l.decided, decision: l.decision, passthrough: l.passthrough,
		local: sysc.Sockname(fd), remote: sysc.Peername(fd)}
	l.mu.Unlock()
	s.nonblock.Store(flags&unix.SOCK_NONBLOCK != 0)
	e.tcpAccepted(l, s)
	e.openStats(fd, s)
	e.register(fd, s)
}

// fionread is the FIONREAD (SIOCINQ) ioctl request (asm-generic value).
const fionread = 0x541B

// fionbio is the FIONBIO ioctl request (asm-generic value, used by x86-64 and arm64).
const fionbio = 0x5421

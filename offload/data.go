package offload

import (
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

var remoteNone netip.AddrPort

// transfer performs a data call through the socket's transport and counts it.
func (e *Engine) transfer(s *Socket, c *transport.Call) int64 {
	if c.Op.Send() && s.typ == sockDgram && !s.isDecided() {
		// An unconnected, unbound UDP socket learns its role at its first send.
		if dst := sendDestination(c); dst.IsValid() {
			e.decide(s, c.FD, conf.RoleUDPSender, localAddr(c.FD), dst)
		}
	}
	if c.Op.Receive() && s.typ == sockDgram && e.udpRings() {
		if errno := e.udpWaitInbox(s, c); errno != 0 {
			e.count(s, c, -1, errno, true)
			return result(-1, errno)
		}
	}
	if s.typ == sockStream {
		if t := s.shmTCP(); t != nil {
			e.tcpEstablish(s, t, c.FD)
			defer e.tcpFill(s, t)
		}
	}
	var n int
	var errno syscall.Errno
	tr := s.transport()
	os := true
	if r, ok := tr.(transport.Router); ok {
		n, errno, os = r.TransferVia(*c)
	} else {
		n, errno = tr.Transfer(*c)
		os = tr.Kind() == transport.KindOS
	}
	e.count(s, c, n, errno, os)
	if errno == unix.EPIPE && s.typ == sockStream && sigpipeDue(c) {
		return -(errSigpipe + int64(unix.EPIPE))
	}
	return result(n, errno)
}

func (s *Socket) isDecided() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decided
}

func (s *Socket) transport() transport.Transport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tr
}

// sendDestination is the address a send names (sendto, sendmsg, sendmmsg), if any.
func sendDestination(c *transport.Call) netip.AddrPort {
	switch c.Op {
	case transport.OpSendto:
		return sysc.SockaddrIn(c.A[3], uint32(c.A[4]))
	case transport.OpSendmsg:
		return sysc.MsgName(c.A[0])
	case transport.OpSendmmsg:
		if uint32(c.A[1]) > 0 {
			return sysc.MmsgName(c.A[0])
		}
	}
	return netip.AddrPort{}
}

// sigpipeDue reports whether the kernel raised SIGPIPE with an EPIPE of c: the call has no
// MSG_NOSIGNAL (write, writev and sendfile cannot have it).
func sigpipeDue(c *transport.Call) bool {
	var flags uintptr
	switch c.Op {
	case transport.OpSendto, transport.OpSendmmsg:
		flags = c.A[2]
	case transport.OpSendmsg:
		flags = c.A[1]
	}
	return flags&unix.MSG_NOSIGNAL == 0
}

// count adds a data call's outcome to the socket's counters.
func (e *Engine) count(s *Socket, c *transport.Call, n int, errno syscall.Errno, os bool) {
	ctr := &s.counters
	switch {
	case errno == unix.EAGAIN:
		ctr.EAgain.Add(1)
		if c.Op.Receive() {
			s.st.CountRxEAGAIN(os)
		} else {
			s.st.CountTxEAGAIN(os)
		}
		return
	case errno != 0:
		ctr.Errors.Add(1)
		if c.Op.Receive() {
			s.st.CountRxError(os)
		} else {
			s.st.CountTxError(os)
		}
		return
	}
	rx := c.Op.Receive()
	if c.Op == transport.OpRecvmmsg || c.Op == transport.OpSendmmsg {
		for i := 0; i < n; i++ {
			e.countOne(s, rx, os, sysc.MmsgLen(c.A[0], i))
		}
		return
	}
	if n == 0 && s.typ == sockStream {
		return // end of stream, or nothing written
	}
	e.countOne(s, rx, os, n)
}

// countOne counts one datagram or one stream call that moved bytes.
func (e *Engine) countOne(s *Socket, rx, os bool, bytes int) {
	ctr := &s.counters
	if rx {
		ctr.RxPackets.Add(1)
		ctr.RxBytes.Add(uint64(bytes))
		s.st.CountRx(os, bytes)
	} else {
		ctr.TxPackets.Add(1)
		ctr.TxBytes.Add(uint64(bytes))
		s.st.CountTx(os, bytes)
	}
}

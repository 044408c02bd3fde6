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
			e.decide(s, c.FD, conf.RoleUDPSender, s.localAddr(c.FD), dst)
		}
	}
	if c.Op.Receive() && s.typ == sockDgram && e.udpRings() {
		if errno := e.udpWaitInbox(s, c); errno != 0 {
			e.count(s, c, -1, errno, true)
			return result(-1, errno)
		}
	}
	if s.typ == sockStream {
		if r := s.rings(); r != nil {
			r.BeforeData(c.FD)
			defer e.publishQueues(s, r)
		}
	}
	n, errno, os := s.transport().TransferVia(*c)
	if c.Op.Send() {
		s.unbound.Store(false) // the kernel binds an unbound socket at its first send
	}
	e.count(s, c, n, errno, os)
	if s.typ == sockStream {
		if r := s.rings(); r != nil {
			e.afterData(s, r)
		}
	} else if c.Op == transport.OpSendto || c.Op == transport.OpWrite {
		e.allowKernelSends(s, c, os, errno)
	}
	if errno == unix.EPIPE && s.typ == sockStream && sigpipeDue(c) {
		return -(errSigpipe + int64(unix.EPIPE))
	}
	return result(n, errno)
}

// isDecided reports whether a rule decision was made for the socket.
func (s *Socket) isDecided() bool { return s.decided.Load() }

// transport is the socket's transport.
func (s *Socket) transport() transport.Endpoint { return *s.tr.Load() }

// queuesEvery is how many data calls pass between two updates of a stream socket's queue sizes
// in the statistics segment.
const queuesEvery = 32

// publishQueues publishes how full a stream socket's transport queues are (Recv-Q and Send-Q in
// goxio_stats) every queuesEvery data calls.
func (e *Engine) publishQueues(s *Socket, r transport.Endpoint) {
	if s.st == nil || s.queueTick.Add(1)%queuesEvery != 1 {
		return
	}
	if rx, tx, ok := r.Queues(); ok {
		s.st.SetRxQueue(0, rx)
		s.st.SetTxQueue(tx)
	}
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
			if !rx || !e.precounted(s, os) {
				e.countOne(s, rx, os, sysc.MmsgLen(c.A[0], i))
			}
		}
		return
	}
	if n == 0 && s.typ == sockStream {
		return // end of stream, or nothing written
	}
	if rx && e.precounted(s, os) {
		return
	}
	e.countOne(s, rx, os, n)
}

// precounted reports whether a datagram a receive took was counted already, when its transport
// queued it in a box (transport.Precounter); a kernel datagram (os) never was.
func (e *Engine) precounted(s *Socket, os bool) bool {
	if os || s.typ != sockDgram {
		return false
	}
	p, ok := s.transport().(transport.Precounter)
	return ok && p.TakePrecounted()
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

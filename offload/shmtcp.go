package offload

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/shmtcp"
)

// Shared-memory TCP (GOXIO_SHM_TCP=1 with GOXIO_SHM=1): an offloaded TCP socket gets a
// shmtcp.TCP transport at its rule decision (connect, listen); a connection accepted on a
// listener gets one of its own. The transport is told the connection is established lazily, at
// its first data call (before the transport serves it, as shmtcp requires): a server that forks
// right after accept (one child per connection) never pairs in the parent, so the child, which
// cannot read rings, gets everything through the kernel.

// offloadTCPLocked gives an offloaded TCP socket the shared-memory transport (once); s.mu is held.
func (e *Engine) offloadTCPLocked(s *Socket) bool {
	if e.cfg.SHMTCP == nil || s.typ != sockStream || s.domain != unix.AF_INET {
		return false
	}
	if _, ok := s.tr.(*shmtcp.TCP); !ok {
		t := e.cfg.SHMTCP.NewTCP(s.nonblock.Load)
		s.tr = t
		s.tcp.Store(t)
	}
	s.kind, s.reason = transport.KindSHM, transport.ReasonNone
	return true
}

// shmTCP is the socket's shared-memory TCP transport, or nil. Lock-free: readiness checks of
// epoll sets call it for every member while they poll.
func (s *Socket) shmTCP() *shmtcp.TCP { return s.tcp.Load() }

// tcpEstablish tells the transport that the connection is up, before its first data call:
// when the kernel socket has a peer (a non-blocking connect may still be in progress:
// the call then goes to the kernel, and the next one looks again).
func (e *Engine) tcpEstablish(s *Socket, t *shmtcp.TCP, fd int) {
	if s.tcpEstablished.Load() || s.tcpNoPair.Load() {
		return
	}
	if !sysc.Peername(fd).IsValid() {
		return
	}
	// Every data call asks until one got through: the transport opens the segment once, and a
	// call that comes while another thread opens it waits for it (a call that went to the
	// kernel meanwhile would break the stream's accounting).
	t.Established(fd, s.tcpServer)
	s.tcpEstablished.Store(true)
}

// tcpFillEvery is how many data calls pass between two updates of a connection's ring fill in
// the statistics segment.
const tcpFillEvery = 32

// tcpFill publishes how full the connection's rings are (Recv-Q and Send-Q in goxio_stats) every
// tcpFillEvery data calls.
func (e *Engine) tcpFill(s *Socket, t *shmtcp.TCP) {
	if s.st == nil || s.fillTick.Add(1)%tcpFillEvery != 1 {
		return
	}
	st := t.Stats()
	if !st.Paired {
		return
	}
	s.st.SetRxQueue(0, int(min(st.RxFill, 1<<31)))
	s.st.SetTxQueue(int(min(st.TxFill, 1<<31)))
}

// tcpAccepted gives a connection accepted on a shared-memory listener its own transport.
func (e *Engine) tcpAccepted(l, s *Socket) {
	if _, ok := l.transport().(*shmtcp.TCP); !ok || e.cfg.SHMTCP == nil {
		return
	}
	t := e.cfg.SHMTCP.NewTCP(s.nonblock.Load)
	s.mu.Lock()
	s.tr = t
	s.mu.Unlock()
	s.tcp.Store(t)
	s.tcpServer = true
}

// tcpControl lets the transport see a control call before (pre) or after the kernel made it.
func (e *Engine) tcpBefore(s *Socket, c *transport.Call) {
	t := s.shmTCP()
	if t == nil {
		return
	}
	if c.Op == transport.OpShutdown {
		t.Shutdown(c.FD, int(int32(c.A[0])))
	}
}

// tcpAfter follows what a control call the kernel accepted changes for the transport.
func (e *Engine) tcpAfter(s *Socket, c *transport.Call, errno uintptr) {
	t := s.shmTCP()
	if t == nil || errno != 0 {
		return
	}
	switch c.Op {
	case transport.OpSetsockopt:
		t.OptionSet(c.FD, int(int32(c.A[0])), int(int32(c.A[1])))
	case transport.OpGetsockopt:
		if int(int32(c.A[0])) == unix.IPPROTO_TCP && c.A[2] != 0 && c.A[3] != 0 {
			if v, ok := t.TCPOption(int(int32(c.A[1]))); ok {
				writeIntOpt(c.A[2], c.A[3], v)
			}
		}
	}
}

// tcpIoctl answers FIONREAD and SIOCOUTQ from the rings once the connection uses them.
func (e *Engine) tcpIoctl(s *Socket, c *transport.Call) (int64, bool) {
	t := s.shmTCP()
	if t == nil || c.A[1] == 0 {
		return 0, false
	}
	var v int
	var ok bool
	switch uint32(c.A[0]) {
	case fionread:
		v, ok = t.InQueue(c.FD)
	case siocoutq:
		v, ok = t.OutQueue()
	}
	if !ok {
		return 0, false
	}
	return writeInt32(c.A[1], int32(v)), true
}

// siocoutq is the SIOCOUTQ (TIOCOUTQ) ioctl request.
const siocoutq = 0x5411

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

// writeIntOpt overwrites an int option value getsockopt returned (the kernel already checked
// the buffer and wrote its length).
func writeIntOpt(val, lenp uintptr, v int) {
	umem.Protect()
	defer func() { umem.Fault(recover()) }()
	if *umem.Uint32(lenp) >= 4 {
		*umem.Int32(val) = int32(v)
	}
}

package offload

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/iomux"
	"github.com/goxio/goxio/offload/transport"
)

// Flags of the C-side fd table (GOXIO_FD_* in shim/goxio.h).
const (
	FlagEngine   uint8 = 1  // every call on the fd enters the engine
	FlagInternal uint8 = 2  // the library's own fd, invisible to the program
	FlagWatch    uint8 = 4  // passed through, but its close is reported (OpForget)
	FlagRing     uint8 = 8  // readiness partly in rings: select, poll and epoll_ctl enter the engine
	FlagEpoll    uint8 = 16 // an epoll fd with ring sockets: epoll_wait enters the engine
)

// FDTable is the C-side fd table as the engine sees it. The shim's implementation writes the
// table the trampolines read; tests use a map.
type FDTable interface {
	Set(fd int, flags uint8)
}

// Engine serves the sockets of one process.
type Engine struct {
	cfg    Config
	log    *zap.Logger
	reg    registry
	nextID atomic.Uint64
	os     transport.Endpoint // the kernel transport

	sectionOnce sync.Once
	sect        atomic.Pointer[conf.Section] // replaced whole when a rule is added at run time (AddRule)

	mux *iomux.Mux // select, poll and epoll

	extraAPI atomic.Bool // the program was handed VMA's extra API (forgood.go: keepEngine)
}

// New returns an engine for cfg.
func New(cfg Config) *Engine {
	e := &Engine{cfg: cfg, log: cfg.Log, os: kernelTransport()}
	if e.log == nil {
		e.log = zap.NewNop()
	}
	e.mux = iomux.New(cfg.IOMux, muxHost{e}, e.log)
	return e
}

// errSigpipe marks EPIPE from a call for which the kernel raised SIGPIPE (GOXIO_ERR_SIGPIPE in
// shim/boundary.c).
const errSigpipe = 0x10000

const (
	sockStream = unix.SOCK_STREAM
	sockDgram  = unix.SOCK_DGRAM
)

func result(n int, e syscall.Errno) int64 {
	if e != 0 {
		return -int64(e)
	}
	return int64(n)
}

// Call performs one intercepted call and returns its result, or -errno.
func (e *Engine) Call(c *transport.Call) int64 {
	e.xdpFlush(c)
	switch c.Op {
	case transport.OpSocket:
		e.open(c.FD, int(int32(c.A[0])), int(int32(c.A[1])), int(int32(c.A[2])), true)
		if c.A[3] != 0 {
			// A TCP socket the preload library gave the engine late (shim/preload/late.c):
			// the program set options the transport follows meanwhile; read them back.
			e.adoptOptions(c.FD)
		}
		return 0
	case transport.OpForget:
		e.forget(c.FD)
		e.mux.ClosedEpoll(c.FD)
		return 0
	case transport.OpPoll:
		return e.mux.Poll(c)
	case transport.OpSelect:
		return e.mux.Select(c)
	case transport.OpEpollCtl:
		return e.mux.EpollCtl(c)
	case transport.OpEpollWait:
		return e.mux.EpollWait(c)
	}
	s := e.reg.get(c.FD)
	if c.Op == transport.OpZcopyRecv {
		if z := zcopyAt(c.A[0]); z.op != 0 {
			return e.boxRecv(s, c.FD, z) // a plain receive (shim/preload/box.c)
		}
	}
	if s == nil && (c.Op == transport.OpZcopyRecv || c.Op == transport.OpZcopyFree) {
		return -int64(unix.EOPNOTSUPP) // no socket of ours: the preload library copies
	}
	if s == nil && c.Op == transport.OpDup {
		return 0 // the copy of an fd the engine does not know (the kernel made it already)
	}
	if s == nil {
		return e.stale(c)
	}
	switch {
	case c.Op.Receive() || c.Op.Send():
		return e.transfer(s, c)
	case c.Op == transport.OpClose:
		return e.close(c.FD)
	case c.Op == transport.OpZcopyRecv:
		return e.zcopyRecv(s, c)
	case c.Op == transport.OpZcopyFree:
		return e.zcopyFree(s, c)
	case c.Op == transport.OpDup:
		e.dup(s, int(int32(c.A[0])))
		return 0
	}
	return e.control(s, c)
}

// stale answers a call on an fd the engine does not know (the table sent it on a stale flag): the
// flag goes, and the kernel answers.
func (e *Engine) stale(c *transport.Call) int64 {
	e.cfg.Table.Set(c.FD, 0)
	return result(kernelDo(c))
}

// open registers a new AF_INET or AF_INET6 socket: one the program just created (born), or one
// adopted (made before the engine loaded).
func (e *Engine) open(fd, domain, typ, proto int, born bool) {
	if uint(fd) >= FDTableSize || !inetDomain(domain) {
		return
	}
	kind := typ & 0xf
	if kind != sockStream && kind != sockDgram {
		return
	}
	s := &Socket{id: e.nextID.Add(1), domain: domain, typ: kind, proto: proto, kind: transport.KindOS}
	s.setTransport(e.os)
	s.mux.Stream = kind == sockStream
	s.born = born
	s.unbound.Store(born)
	s.nonblock.Store(typ&unix.SOCK_NONBLOCK != 0)
	if !e.cfg.Offload {
		s.passthrough = true
		s.reason = transport.ReasonDisabled
	}
	e.openStats(fd, s)
	e.register(fd, s)
	e.log.Debug("socket", zap.Int("fd", fd), zap.String("proto", s.protoName()), zap.Bool("offload", !s.passthrough))
}

// inetDomain reports whether sockets of the domain are the engine's candidates.
func inetDomain(domain int) bool { return domain == unix.AF_INET || domain == unix.AF_INET6 }

// register makes fd refer to s, in the registry and in the C-side table.
func (e *Engine) register(fd int, s *Socket) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	if old := e.reg.get(fd); old != nil {
		e.dropLocked(fd, old)
	}
	s.fds = append(s.fds, fd)
	e.reg.put(fd, s)
	flags := FlagEngine
	if s.typ == sockDgram && e.udpRings() || s.typ == sockStream && e.tcpRings() {
		flags |= FlagRing // select and poll ask the transport (offload/iomux)
	}
	if s.passthrough {
		flags = FlagWatch
	}
	e.cfg.Table.Set(fd, flags)
}

// forget drops fd from the engine without touching the kernel fd (closed or replaced already).
func (e *Engine) forget(fd int) {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	if s := e.reg.get(fd); s != nil {
		if s.typ == sockStream && s.rings() != nil {
			e.mux.ClosingStream(fd)
		}
		e.dropLocked(fd, s)
	}
	e.cfg.Table.Set(fd, 0)
}

func (e *Engine) dropLocked(fd int, s *Socket) {
	e.dropKernelSends(fd, s)
	e.reg.put(fd, nil)
	e.cfg.Table.Set(fd, 0)
	if i := slices.Index(s.fds, fd); i >= 0 {
		s.fds = slices.Delete(s.fds, i, i+1)
	}
	if len(s.fds) == 0 {
		e.finish(fd, s)
	} else {
		e.unbox(fd, s) // zcopy.go
	}
}

// finish is called when the last fd of s is gone.
func (e *Engine) finish(fd int, s *Socket) {
	defer e.cfg.Stats.CloseSocket(s.st)
	e.tcpUnlisten(s)
	if r := s.rings(); r != nil {
		r.Finish(fd)
		// The kernel drops a closed file from the epoll sets it is in; so does the engine from
		// its own (an fd number reused by the next accept must be addable again).
		e.mux.Finished(&s.mux)
	}
	if ce := e.log.Check(zap.DebugLevel, "socket closed"); ce != nil {
		snap := s.snapshot(fd)
		ce.Write(zap.Int("fd", fd), zap.String("proto", snap.Proto), zap.Stringer("transport", snap.Transport),
			zap.Uint64("rx_packets", snap.RxPackets), zap.Uint64("rx_bytes", snap.RxBytes),
			zap.Uint64("tx_packets", snap.TxPackets), zap.Uint64("tx_bytes", snap.TxBytes))
	}
}

// close forgets fd, then closes the kernel fd: the number is never described by stale
// bookkeeping once the kernel can hand it out again.
func (e *Engine) close(fd int) int64 {
	e.forget(fd)
	return result(0, sysc.Close(fd))
}

// dup makes nfd, which the kernel has just made as a copy of an fd of s, refer to s too.
func (e *Engine) dup(s *Socket, nfd int) {
	if uint(nfd) >= FDTableSize {
		return
	}
	e.register(nfd, s)
}

// Sockets returns a snapshot of every socket the engine knows, in fd order.
func (e *Engine) Sockets() []Snapshot {
	e.reg.mu.Lock()
	defer e.reg.mu.Unlock()
	var out []Snapshot
	e.reg.each(func(fd int, s *Socket) { out = append(out, s.snapshot(fd)) })
	return out
}

// Socket returns a snapshot of the socket behind fd.
func (e *Engine) Socket(fd int) (Snapshot, bool) {
	s := e.reg.get(fd)
	if s == nil {
		return Snapshot{}, false
	}
	return s.snapshot(fd), true
}

// localAddr is the socket's bound address as the kernel reports it.
func localAddr(fd int) netip.AddrPort { return sysc.Sockname(fd) }

// localAddr is the socket's local address (fd is one of its fds): the kernel's, or, while no
// call could have bound it, its family's wildcard with port 0 without a system call.
func (s *Socket) localAddr(fd int) netip.AddrPort {
	if s.unbound.Load() {
		if s.domain == unix.AF_INET6 {
			return netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
		}
		return netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	return localAddr(fd)
}

// Shutdown withdraws every shared-memory socket and closes the transport (the process exits).
func (e *Engine) Shutdown() {
	e.xdpShutdown()
	if e.cfg.SHM == nil {
		return
	}
	type end struct {
		r  transport.Endpoint
		fd int
	}
	e.reg.mu.Lock()
	var socks, conns []end
	e.reg.each(func(fd int, s *Socket) {
		if r := s.rings(); r != nil && r.Kind() == transport.KindSHM {
			if s.typ == sockDgram {
				socks = append(socks, end{r, fd})
			} else {
				conns = append(conns, end{r, fd})
			}
		}
		e.tcpUnlisten(s)
	})
	e.reg.mu.Unlock()
	for _, u := range socks {
		u.r.Finish(u.fd)
	}
	// Connections end as the kernel ends them at exit (close: EOF, or a reset with unread
	// data), and a segment nobody attached to loses its name now rather than at a later sweep.
	for _, c := range conns {
		c.r.Finish(c.fd)
	}
	if e.cfg.SHMTCP != nil {
		e.cfg.SHMTCP.Close() // the connection segments kept for reuse, once every connection ended
	}
	e.shmClose()
}

package offload

import (
	"bytes"
	"net/netip"
	"strconv"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/conf"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/stats"
)

// The engine is loaded on demand (shim/preload/loader.c): by the first call of a process that
// moves data on, or waits on, an AF_INET or AF_INET6 TCP or UDP socket. The sockets and epoll
// sets the process made until then went to the kernel alone; Adopt takes each of them over as
// if the engine had seen it from the start, from what the kernel tells about it (type,
// addresses, listening state, options; an epoll set's members from /proc/self/fdinfo) and the
// little the preload library noted (Lazy). Rule decisions are made then, by the role each socket has.

// Lazy is what the preload library knows of a socket made before the engine loaded that the
// kernel cannot tell later.
type Lazy struct {
	Accepted  bool           // accepted on Listener
	Listener  int            // the listening fd it was accepted on
	Connected bool           // connect was called with Peer (it may still be in progress)
	Peer      netip.AddrPort // connect's address
	IPOptions bool           // an IPPROTO_IP option was set (multicast membership, filters)
	Forked    bool           // the process forked while it had the socket (it may be shared)
	Child     bool           // ... and this process is that fork's child
	RcvBuf    bool           // SO_RCVBUF or SO_RCVBUFFORCE was set (honoured as the receive limit)
	NoOptions bool           // none of the options a transport follows was set: none to read back
	// KernelTx: the sends the preload library made through the kernel itself before the load
	// (to destinations without a goxio receiver): packets, bytes, EAGAIN, other errors.
	KernelTx [4]uint64
	// KernelRx: the datagrams a UDP socket's early phase received through the kernel, and their
	// bytes (shim/preload/early.c).
	KernelRx [2]uint64
	// KernelDst: a UDP socket's early phase sent to it through the kernel, and a goxio receiver
	// may be there (shim/preload/early.c): its first ring datagram there is marked
	// (transport.KernelFirst). The zero AddrPort for none.
	KernelDst netip.AddrPort
}

// ParseSockaddr decodes b, a struct sockaddr_in or sockaddr_in6 as the kernel lays it out (the
// zero AddrPort for anything else), for the cgo layer, which cannot import offload/internal.
func ParseSockaddr(b []byte) netip.AddrPort { return sysc.ParseSockaddr(b) }

// adoptMu serialises adoptions: the loading thread's sweep and a thread whose call met a socket
// flagged lazy meanwhile may adopt the same fd.
var adoptMu sync.Mutex

// adoptedIno maps a socket's inode to an fd adopted for it: another fd of the same socket (dup
// before the load, or inherited) becomes one more fd of that object.
var adoptedIno = map[uint64]int{}

// Adopt takes over fd, a socket or epoll set the process made before the engine was loaded. An
// fd that is neither an AF_INET or AF_INET6 TCP or UDP socket nor an epoll fd is left alone.
func (e *Engine) Adopt(fd int, l Lazy) {
	if uint(fd) >= FDTableSize {
		return
	}
	adoptMu.Lock()
	defer adoptMu.Unlock()
	if e.reg.get(fd) != nil {
		return
	}
	if sysc.IsEpoll(fd) {
		e.adoptEpoll(fd)
		return
	}
	domain, err1 := sysc.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := sysc.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	proto, err3 := sysc.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if err1 != nil || err2 != nil || err3 != nil || !inetDomain(domain) || typ != sockStream && typ != sockDgram {
		return
	}
	ino := sysc.Inode(fd)
	if ofd, ok := adoptedIno[ino]; ok && ofd != fd {
		if o := e.reg.get(ofd); o != nil && sysc.Inode(ofd) == ino {
			e.dup(o, fd)
			return
		}
	}
	flags := typ
	if fl, errno := sysc.FcntlInt(fd, unix.F_GETFL, 0); errno == 0 && fl&unix.O_NONBLOCK != 0 {
		flags |= unix.SOCK_NONBLOCK
	}
	if e.adoptSocket(fd, domain, flags, proto, l) != nil {
		adoptedIno[ino] = fd
	}
}

// AdoptEarly takes over fd, a TCP connection between goxio processes or a UDP socket that sent to
// a goxio receiver, that the preload library served in its early phase (shim/preload/early.c)
// while the engine was loaded: accepted on l.Listener, or connected to a goxio listener (whose
// pairing entry the library registered: the connection's registration takes it over), or sent
// to l.KernelDst (l.KernelTx and l.KernelRx count its calls). p is what happened meanwhile (a
// connection's).
// domain, flags (the type with SOCK_NONBLOCK as it is now) and proto are what the library noted
// at its socket or accept call.
func (e *Engine) AdoptEarly(fd, domain, flags, proto int, l Lazy, p transport.EarlyPhase) {
	if uint(fd) >= FDTableSize || !inetDomain(domain) || flags&0xf != sockStream && flags&0xf != sockDgram {
		return
	}
	adoptMu.Lock()
	defer adoptMu.Unlock()
	if e.reg.get(fd) != nil {
		return
	}
	s := e.adoptSocket(fd, domain, flags, proto, l)
	if s == nil {
		return
	}
	if flags&0xf == sockDgram {
		return // adoptUDP published it as a bound socket (its port is the kernel's choice at its send)
	}
	t, ok := s.rings().(transport.Pairing)
	if !ok {
		return
	}
	t.Early(p)
	if t.KernelForGood() {
		e.kernelForGood(s, transport.ReasonNoFasterPath, "shared-memory TCP: a call was in the kernel when the connection left its early phase")
	}
}

// adoptSocket registers fd, an AF_INET or AF_INET6 socket (flags: its type with
// SOCK_NONBLOCK), with the decision its role calls for; its socket object, or nil.
func (e *Engine) adoptSocket(fd, domain, flags, proto int, l Lazy) *Socket {
	typ := flags & 0xf
	if l.Accepted && typ == sockStream {
		if ls := e.reg.get(l.Listener); ls != nil && ls.typ == sockStream {
			e.accepted(ls, fd, flags, false)
			if !l.NoOptions {
				e.adoptOptions(fd)
			}
			return e.reg.get(fd)
		}
	}
	e.open(fd, domain, flags, proto, false)
	s := e.reg.get(fd)
	if s == nil || s.isPassthrough() {
		return s
	}
	if l.Forked && !listening(fd) && (!l.Child || !l.Accepted || parentHas(sysc.Inode(fd))) {
		// Shared with another process, which reads and writes the kernel socket: the rings
		// would split the stream. A listener is shared harmlessly (accept is the kernel's), and
		// a connection a fork-per-connection server accepted and handed to this child is the
		// child's once the parent closed it.
		s.mu.Lock()
		s.passthrough = true
		s.reason = transport.ReasonForkedChild
		s.mu.Unlock()
		e.handOver(s)
		return s
	}
	local, remote := localAddr(fd), sysc.Peername(fd)
	if !remote.IsValid() && l.Connected {
		remote = l.Peer
	}
	if typ == sockStream {
		e.adoptTCP(s, fd, l, local, remote)
	} else {
		e.adoptUDP(s, fd, l, local, remote)
		earlyKernel(s, l)
	}
	if ce := e.log.Check(zap.DebugLevel, "adopted"); ce != nil {
		ce.Write(zap.Int("fd", fd), zap.String("proto", s.protoName()), zap.Stringer("local", local),
			zap.Stringer("remote", remote))
	}
	return s
}

// adoptTCP makes the decision a listen, an accept or a connect would have made.
func (e *Engine) adoptTCP(s *Socket, fd int, l Lazy, local, remote netip.AddrPort) {
	if listening(fd) {
		s.st.SetState(stats.TCPListen)
		e.decide(s, fd, conf.RoleTCPServer, local, remoteNone)
		// Published as a listen would: a process with an engine that connects to it later
		// (iperf3's data connection, a client reconnecting to a prefork worker) judges its
		// peer from the directory (tcppeer.go).
		e.tcpListening(s, fd)
		e.listenerReadiness(s)
		return
	}
	switch {
	case l.Accepted && remote.IsValid():
		// accepted on a listener that is gone: a server's connection all the same (the role
		// tells the transport which end it is)
		e.decide(s, fd, conf.RoleTCPServer, local, remote)
	case remote.IsValid():
		e.decide(s, fd, conf.RoleTCPClient, local, remote)
		// Judged by the directory as connect would (tcppeer.go): a listener of a goxio process
		// whose engine is not loaded yet is there too (published from C, lazy_listen.c).
		e.tcpConnecting(s)
	default:
		return // no role yet: listen or connect will tell
	}
	if !l.NoOptions {
		e.adoptOptions(fd)
	}
}

// adoptOptions tells a shared-memory TCP transport the options the program set on the kernel
// socket before the engine was there.
func (e *Engine) adoptOptions(fd int) {
	s := e.reg.get(fd)
	if s == nil {
		return
	}
	t := s.rings()
	if t == nil {
		return
	}
	for _, o := range [...][2]int{{unix.IPPROTO_TCP, unix.TCP_NODELAY}, {unix.SOL_SOCKET, unix.SO_RCVTIMEO},
		{unix.SOL_SOCKET, unix.SO_SNDTIMEO}, {unix.SOL_SOCKET, unix.SO_LINGER}} {
		t.OptionSet(fd, o[0], o[1])
	}
}

// adoptUDP makes the decision a connect or a bind would have made. A socket with IP options set
// before (multicast memberships, source filters) stays with the kernel: the rings would not know
// its groups.
func (e *Engine) adoptUDP(s *Socket, fd int, l Lazy, local, remote netip.AddrPort) {
	if l.IPOptions {
		s.mu.Lock()
		s.passthrough = true
		s.reason = transport.ReasonUnsupported
		s.mu.Unlock()
		e.handOver(s)
		return
	}
	switch {
	case remote.IsValid():
		e.decide(s, fd, conf.RoleUDPConnect, local, remote)
		e.udpConnected(s, fd, remote)
	case local.Port() != 0:
		e.decide(s, fd, conf.RoleUDPReceiver, local, remoteNone)
		e.udpBound(s, fd)
	}
	if u := s.rings(); u != nil {
		// SO_RCVBUF counts as the program's only when it set it: a group member that kept the
		// default gets its ring's capacity (mclimit.go), its inbox has the default's limit.
		if l.RcvBuf {
			u.OptionSet(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		}
		u.OptionSet(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO)
	}
}

// earlyKernel adds what a UDP socket did through the kernel before the engine had it (l's counts)
// to s's statistics (none without a slot: Add takes a nil one), and tells its transport where it
// sent (l.KernelDst).
func earlyKernel(s *Socket, l Lazy) {
	for i, c := range [...]stats.Counter{stats.CtrTxOSPackets, stats.CtrTxOSBytes, stats.CtrTxOSEAGAIN, stats.CtrTxOSErrors} {
		s.st.Add(c, l.KernelTx[i])
	}
	s.st.Add(stats.CtrRxOSPackets, l.KernelRx[0])
	s.st.Add(stats.CtrRxOSBytes, l.KernelRx[1])
	if k, ok := s.rings().(transport.KernelFirst); ok && l.KernelDst.IsValid() {
		k.SentThroughKernel(l.KernelDst)
	}
}

// listening reports whether fd is a listening socket.
func listening(fd int) bool {
	v, err := sysc.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	return err == nil && v != 0
}

// parentHas reports whether the parent process has an fd of the socket with inode ino (or
// whether that cannot be known). A forked child's copy of a socket is its own once the parent
// closed its copy, as a fork-per-connection server does right after the fork.
func parentHas(ino uint64) bool {
	dir := "/proc/" + strconv.Itoa(sysc.Getppid()) + "/fd/"
	names, _, err := sysc.DirNames(dir)
	if err != nil {
		return true
	}
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	link := make([]byte, 64)
	for _, name := range names {
		if k, err := sysc.Readlink(dir+name, link); err == nil && string(link[:k]) == want {
			return true
		}
	}
	return false
}

// adoptEpoll moves the members of the program's epoll set epfd that the engine serves (ring
// sockets) out of the kernel's set into the engine's, with their events and data, as an
// epoll_ctl made with the engine loaded would have placed them.
func (e *Engine) adoptEpoll(epfd int) {
	for _, m := range epollMembers(epfd) {
		s := e.reg.get(m.fd)
		if s == nil || s.isPassthrough() || s.typ == sockStream && s.rings() == nil || s.typ == sockDgram && !e.udpRings() {
			continue // a kernel socket: its readiness is the kernel's, it stays in the program's set
		}
		if listening(m.fd) {
			continue // a listener's readiness is the kernel's
		}
		if errno := sysc.EpollCtl(epfd, unix.EPOLL_CTL_DEL, m.fd, 0, 0); errno != 0 {
			continue
		}
		ev := make([]byte, umem.EpollEventSize)
		umem.PutEpollEvent(ev, 0, m.events, m.data)
		c := transport.Call{Op: transport.OpEpollCtl, FD: m.fd}
		c.A[0], c.A[1] = uintptr(epfd), unix.EPOLL_CTL_ADD
		if r := e.epollCtlAt(&c, ev); r < 0 {
			// Back where it was: the kernel's readiness is better than none.
			errno := sysc.EpollCtl(epfd, unix.EPOLL_CTL_ADD, m.fd, m.events, m.data)
			e.log.Debug("an epoll member made before the engine loaded stays with the kernel",
				zap.Int("epfd", epfd), zap.Int("fd", m.fd), zap.Int64("errno", -r), zap.Int("back errno", int(errno)))
		}
	}
}

// epollMember is one line of /proc/self/fdinfo/<epfd>.
type epollMember struct {
	fd     int
	events uint32
	data   uint64
}

// epollMembers reads the members of epoll set epfd from /proc/self/fdinfo (raw system calls: the
// engine opens no os.File).
func epollMembers(epfd int) []epollMember {
	buf, err := sysc.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		return nil
	}
	return parseEpollFdinfo(buf)
}

// parseEpollFdinfo parses the "tfd: N events: X data: X ..." lines of an epoll fd's fdinfo.
func parseEpollFdinfo(b []byte) []epollMember {
	var out []epollMember
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) < 6 || string(f[0]) != "tfd:" || string(f[2]) != "events:" || string(f[4]) != "data:" {
			continue
		}
		fd, err1 := strconv.Atoi(string(f[1]))
		ev, err2 := strconv.ParseUint(string(f[3]), 16, 32)
		data, err3 := strconv.ParseUint(string(f[5]), 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, epollMember{fd: fd, events: uint32(ev), data: data})
	}
	return out
}

package xdp

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/goxio/goxio/offload/internal/wait"
	"github.com/goxio/goxio/offload/transport/udpcall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// UDP is one offloaded UDP socket on the AF_XDP transport. The engine makes it when a rule
// decision offloads the socket, tells it what the kernel socket learnt (Bound, Connected, Join,
// Leave, OptionSet), has it serve the socket's data calls (Transfer) and closes it with the
// socket's last fd (Close).
type UDP struct {
	env      *Env
	nonblock func() bool // the socket's O_NONBLOCK, kept by the engine
	// Domain, when set (AF_INET or AF_INET6), is the kernel socket's family, which the engine
	// knows from socket(): the transport then does not ask the kernel.
	Domain int

	mu       sync.Mutex // guards the fields below
	local    netip.AddrPort
	peer     netip.AddrPort
	joins    []join
	mcAll    bool
	fallback error // why the socket receives through the kernel only; nil when steered
	closed   bool

	// Guarded by env.mu: the flows and groups the socket holds in the steering programs.
	flows  []flowKey
	groups []groupKey
	bind   atomic.Pointer[binding] // what the demultiplexer sees

	q *rxQueue

	bellMu sync.Mutex
	bellR  atomic.Int32 // the wake pipe's read end, made at the first sleep; -1 before (write end: q.bellW)
	watch  atomic.Int32 // the bell of select, poll and epoll (ready.go); -1 before the first Bell
	watchN atomic.Int32 // how many of the Env's AF_XDP sockets the bell watches

	// OnFallback, when set, is told (outside the socket's locks) when the socket comes to
	// receive through the kernel only: Fallback's reason, the first time it appears.
	OnFallback func(err error)
	// OnRxDrop and OnTxDrop, when set, count a steered datagram dropped because the socket's
	// queue was full (its payload size) and a sent datagram dropped because the TX ring stayed
	// full (the send still succeeded, as with a full NIC queue).
	OnRxDrop func(bytes int)
	OnTxDrop func()

	spill udpcall.Spill  // datagrams spilled at a fork (handover.go)
	own   udpcall.OwnRef // the socket's own reference for blocking receives

	users transport.Users // calls inside the transport; Close happened

	kernelOnly atomic.Bool   // GiveUp happened
	gaveUp     atomic.Uint32 // the transport.Reason GiveUp was given
	wrShut     atomic.Bool   // shutdown(SHUT_WR): sends go to the kernel, which fails them
	rcvTimeo   atomic.Int64  // SO_RCVTIMEO in nanoseconds; 0: none
	waitAvg    wait.Avg      // how long blocking receives wait for data, typically (recv.go)
	tos        atomic.Uint32
	ttl        atomic.Uint32
	mcTTL      atomic.Uint32
	mcLoop     atomic.Bool
	mcIf       atomic.Uint32 // IP_MULTICAST_IF address (network order bytes as uint32); 0: none
	ipID       atomic.Uint32
	// IPv6 (an AF_INET6 socket): v6 (its family) and v6only (IPV6_V6ONLY) are learnt at Bound; the others
	// are the options its IPv6 datagrams follow (ipv6opts.go).
	v6, v6only atomic.Bool
	tclass     atomic.Uint32 // IPV6_TCLASS
	hops       atomic.Int32  // IPV6_UNICAST_HOPS as getsockopt reads it
	autoLabel  atomic.Bool   // flow labels are made for its datagrams (IPV6_AUTOFLOWLABEL, net.ipv6.auto_flowlabels)
	sndFlow    atomic.Bool   // IPV6_FLOWINFO_SEND: the program gives flow labels in sin6_flowinfo
	peerScope  atomic.Uint32 // the connected peer's sin6_scope_id (a link-local peer's interface)
	ucastIf    atomic.Uint32 // IPV6_UNICAST_IF: the interface IPv6 unicast leaves by without a scope id
	stateless  atomic.Bool   // net.ipv6.flowlabel_state_ranges: automatic labels carry the stateless flag
	txq        int           // which queue of an interface this socket transmits on

	route atomic.Pointer[route] // the last destination and how to reach it

	counters

	capFD atomic.Int32 // the fd the socket got its port on, named in capture records
}

// NewUDP returns the transport of one UDP socket. nonblock reports the socket's O_NONBLOCK.
func (e *Env) NewUDP(nonblock func() bool) *UDP {
	u := &UDP{env: e, nonblock: nonblock, q: newRxQueue(e.p.QueueLen), mcAll: true}
	u.bellR.Store(-1)
	u.watch.Store(-1)
	u.ttl.Store(64)
	u.mcTTL.Store(1)
	u.mcLoop.Store(true)
	u.txq = int(e.nextTxq.Add(1))
	return u
}

var _ transport.Router = (*UDP)(nil)

// Kind is transport.KindXDP.
func (u *UDP) Kind() transport.Kind { return transport.KindXDP }

// Transfer performs a data call.
func (u *UDP) Transfer(c transport.Call) (int, syscall.Errno) {
	n, errno, _ := u.TransferVia(c)
	return n, errno
}

// TransferVia performs a data call and reports whether its datagram went through the kernel.
func (u *UDP) TransferVia(c transport.Call) (int, syscall.Errno, bool) {
	if !u.enter() {
		return -1, unix.EBADF, false
	}
	defer u.exit()
	if c.Op.Receive() {
		return u.recv(&c, nil)
	}
	return u.send(&c)
}

// Bound tells the socket that its kernel socket fd has a local address now (bind, connect, or
// the implicit bind of a first send): its flows are steered to the AF_XDP sockets.
func (u *UDP) Bound(fd int) {
	u.readOptions(fd)
	u.mu.Lock()
	if u.closed || u.kernelOnly.Load() {
		u.mu.Unlock()
		return
	}
	local := sysc.Sockname(fd)
	if !local.IsValid() || local.Port() == 0 {
		u.mu.Unlock()
		return
	}
	u.local = local
	u.capFD.Store(int32(fd))
	u.publishUnlock()
}

// Connected tells the socket that its kernel socket is connected to peer (or disconnected,
// when peer is the zero value).
func (u *UDP) Connected(fd int, peer netip.AddrPort) {
	scope := uint32(0)
	if sa, err := unix.Getpeername(fd); err == nil {
		if sa6, ok := sa.(*unix.SockaddrInet6); ok {
			scope = sa6.ZoneId
		}
	}
	u.peerScope.Store(scope)
	u.mu.Lock()
	u.peer = peer
	u.mu.Unlock()
	u.route.Store(nil)
	u.Bound(fd)
}

// Join tells the socket that its kernel socket joined group (source: one source only, zero for
// any), on whatever interface: the group's datagrams to the socket's port are steered on every
// offloaded interface. The engine makes the kernel socket join first (IGMP and the switch see
// the membership through it).
func (u *UDP) Join(fd int, group, source netip.Addr) {
	u.mu.Lock()
	j := join{group: group, source: source}
	for _, have := range u.joins {
		if have == j {
			u.mu.Unlock()
			return
		}
	}
	u.joins = append(u.joins, j)
	u.republishUnlock()
}

// Leave undoes Join: it drops the membership for source, or every membership of group when
// source is the zero value (IP_DROP_MEMBERSHIP and MCAST_LEAVE_GROUP leave the group
// altogether, source filters included).
func (u *UDP) Leave(group, source netip.Addr) {
	u.mu.Lock()
	kept := u.joins[:0:0]
	for _, have := range u.joins {
		if have.group != group || source.IsValid() && have.source != source {
			kept = append(kept, have)
		}
	}
	u.joins = kept
	u.republishUnlock()
}

// republishUnlock publishes the socket's binding again when it has one; it releases u.mu.
func (u *UDP) republishUnlock() {
	if !u.local.IsValid() || u.closed || u.kernelOnly.Load() {
		u.mu.Unlock()
		return
	}
	u.publishUnlock()
}

// publishUnlock hands the socket's binding to the Env and releases u.mu; the reason the socket
// receives through the kernel only, when it just appeared, goes to OnFallback.
func (u *UDP) publishUnlock() {
	b := &binding{local: u.local, peer: u.peer, joins: append([]join(nil), u.joins...), mcAll: u.mcAll,
		v6: u.v6.Load(), v6only: u.v6only.Load()}
	u.env.mu.Lock()
	why := u.env.publishLocked(u, b)
	u.env.mu.Unlock()
	fresh := why != nil && u.fallback == nil
	if fresh {
		u.env.log.Debug("xdp: socket receives through the kernel", zap.Stringer("local", u.local), zap.Error(why))
	}
	u.fallback = why
	u.mu.Unlock()
	if fresh && u.OnFallback != nil {
		u.OnFallback(why)
	}
}

// Fallback returns why the socket receives only through the kernel (no flow of it is steered:
// its interface is busy with another XDP program, capabilities are missing, no offloaded
// interface has its address), or nil.
func (u *UDP) Fallback() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.fallback
}

// readOptions reads the options the transport follows from the kernel socket.
func (u *UDP) readOptions(fd int) {
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS); err == nil {
		u.tos.Store(uint32(v))
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TTL); err == nil && v > 0 {
		u.ttl.Store(uint32(v))
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_TTL); err == nil {
		u.mcTTL.Store(uint32(v))
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP); err == nil {
		u.mcLoop.Store(v != 0)
	}
	if a, err := unix.GetsockoptInet4Addr(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF); err == nil {
		u.mcIf.Store(uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]))
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_ALL); err == nil {
		u.mu.Lock()
		u.mcAll = v != 0
		u.mu.Unlock()
	}
	if tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO); err == nil {
		u.rcvTimeo.Store(tv.Nano())
	}
	u.readIPv6Options(fd)
}

// OptionSet tells the socket that the program set an option on its kernel socket: the ones the
// transport follows (IP_TOS, IP_TTL, IP_MULTICAST_TTL, IP_MULTICAST_LOOP, IP_MULTICAST_IF,
// IP_MULTICAST_ALL, SO_RCVTIMEO, and for IPv6 those of readIPv6Options) are read back from the
// kernel.
func (u *UDP) OptionSet(fd, level, name int) {
	if level != unix.IPPROTO_IP && level != unix.SOL_SOCKET && level != unix.IPPROTO_IPV6 {
		return
	}
	u.readOptions(fd)
	u.route.Store(nil)
	if level == unix.IPPROTO_IP && name == unix.IP_MULTICAST_ALL {
		u.mu.Lock()
		u.republishUnlock()
	}
}

// ShutWrite tells the socket that the program shut it down for sending.
func (u *UDP) ShutWrite() { u.wrShut.Store(true) }

// GiveUp sends the socket back to the kernel for good (an option the rings cannot honour, a
// fork, an interface it cannot use), r saying why: its flows are no longer steered, datagrams
// already queued are still read first.
func (u *UDP) GiveUp(r transport.Reason) {
	u.mu.Lock()
	defer u.mu.Unlock()
	defer u.spill.End() // a hand-over that made no spill region
	if u.kernelOnly.Load() {
		return
	}
	u.gaveUp.Store(uint32(r))
	u.kernelOnly.Store(true)
	u.env.mu.Lock()
	u.env.publishLocked(u, nil)
	u.env.mu.Unlock()
}

// GaveUp reports why the socket went back to the kernel (GiveUp), or transport.ReasonNone.
func (u *UDP) GaveUp() transport.Reason {
	if !u.kernelOnly.Load() {
		return transport.ReasonNone
	}
	return transport.Reason(u.gaveUp.Load())
}

// Close withdraws the socket's flows; its queued frames go back to the fill rings when the last
// call using the socket returns.
func (u *UDP) Close() {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return
	}
	u.closed = true
	u.env.mu.Lock()
	u.env.publishLocked(u, nil)
	u.env.mu.Unlock()
	u.mu.Unlock()
	u.users.Close(u.release)
}

// enter marks a call using the socket; false when the socket is closed.
func (u *UDP) enter() bool { return u.users.Enter(u.release) }

// exit ends a call; the last one out of a closed socket releases the queue.
func (u *UDP) exit() { u.users.Exit(u.release) }

// release gives the queued frames back and closes the wake pipe and watch fds (once, by Users).
func (u *UDP) release() {
	for _, b := range u.q.takeAll() {
		b.release()
	}
	u.bellMu.Lock()
	u.q.mu.Lock()
	for _, p := range []*atomic.Int32{&u.watch, &u.bellR, &u.q.bellW} {
		if fd := int(p.Swap(-1)); fd >= 0 {
			u.env.closeFD(fd)
		}
	}
	u.q.mu.Unlock()
	u.bellMu.Unlock()
	u.own.Drop(true, u.env.closeFD)
}

// closeFD releases and closes an internal fd of a socket.
func (e *Env) closeFD(fd int) {
	e.releaseFD(fd)
	unix.Close(fd)
}

// ensureBell returns the read end of the socket's wake pipe, making the pipe on first use; -1
// when no fd is left (the sleeper then wakes on its RX rings and the kernel socket only, and
// polls again every millisecond).
func (u *UDP) ensureBell() int {
	if b := u.bellR.Load(); b >= 0 {
		return int(b)
	}
	u.bellMu.Lock()
	defer u.bellMu.Unlock()
	return u.ensureBellLocked()
}

// ensureBellLocked is ensureBell with bellMu held.
func (u *UDP) ensureBellLocked() int {
	if b := u.bellR.Load(); b >= 0 || u.users.Closed() {
		return int(b)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		u.env.log.Info("xdp: no wake pipe", zap.Error(err))
		return -1
	}
	w := int32(u.env.adopt(p[1]))
	u.q.mu.Lock()
	u.q.bellW.Store(w)
	u.q.mu.Unlock()
	u.bellR.Store(int32(u.env.adopt(p[0])))
	return int(u.bellR.Load())
}

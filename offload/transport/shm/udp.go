package shm

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/goxio/goxio/offload/internal/wait"
	"github.com/goxio/goxio/offload/transport/udpcall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/discovery"
	"github.com/goxio/goxio/offload/internal/sysc"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
)

// UDP is one offloaded UDP socket on the shared-memory transport. The engine makes it when a rule
// decision offloads the socket and tells it what the kernel socket learnt (Bound, Connected); it
// serves the socket's data calls (Transfer) and is closed with the socket's last fd (Close).
type UDP struct {
	env *Env

	nonblock func() bool // the socket's O_NONBLOCK, kept by the engine
	// OnDrop, when set, counts a datagram the send call accepted but the receiver's full ring
	// dropped (as a full kernel receive buffer drops it: the send still succeeds).
	OnDrop func()
	// Domain, when set (AF_INET or AF_INET6), is the kernel socket's family, which the engine
	// knows from socket(): the transport then does not ask the kernel.
	Domain int
	// KernelTx, when set, is the statistics slot's count of the socket's sends the kernel
	// served, to which the library's sending trampoline adds its own (shim/preload/ksend.c): a
	// ring datagram that follows any of them is marked (order.go). Memory that stays mapped for
	// the process's life (stats.Socket.TxKernelWords).
	KernelTx *uint64
	// TxRing, when set, is the statistics slot's ring tx packets and bytes words, which the
	// library's own ring sends count into (rsend.go). Memory as KernelTx's.
	TxRing *[2]uint64
	// RxKernel, when set, is the statistics slot's kernel receive packets, bytes, EAGAIN and
	// errors words, which the library's own kernel reads count into (kread.go). Memory as
	// KernelTx's.
	RxKernel *[4]uint64
	tx       txState // the library's own ring sends (rsend.go)

	mu    sync.Mutex // guards the fields below and changes of inbox
	local netip.AddrPort
	// family is the kernel socket's (AF_INET, or AF_INET6 with v6only its IPV6_V6ONLY), known
	// from its first local address (takePortLocked) or an implicit bind (ensureBound).
	family    int
	v6only    bool
	peer      netip.AddrPort
	pub       discovery.Handle
	published bool
	closed    bool
	gaveUp    transport.Reason // not ReasonNone: the socket went back to the kernel for good

	inbox atomic.Pointer[ring.Inbox] // nil until the socket has a port (or opens it, lazy.go)
	// lazy: the socket got its port from a send (the kernel's implicit bind) and opens its
	// inbox at a later data call (lazy.go); lazyCalls counts its data calls since.
	lazy      atomic.Bool
	lazyCalls atomic.Int32
	// kernelRx counts receives asleep in the kernel socket because the socket had no inbox; the
	// inbox is published only while there are none (lazy.go).
	kernelRx atomic.Int32
	// kernelFirst: the inbox was published after the socket had a port, so goxio peers may have
	// left older datagrams in the kernel socket: receives take those first (lazy.go).
	kernelFirst atomic.Bool
	// lastOS: the last datagram a receive took came from the kernel socket; the next blocking
	// receive looks there at its first poll (recv.go).
	lastOS atomic.Bool
	// precounted: datagrams receives took from the box, counted when queued, that the engine has
	// not left out of the socket's counters yet (TakePrecounted).
	precounted atomic.Int64
	// bell is the inbox's doorbell fd, made when a thread first sleeps on the socket (ensureBell)
	// so that sockets nobody sleeps on cost no fd; -1 before.
	bell   atomic.Int32
	bellMu sync.Mutex
	// own is the socket's own reference for blocking receives.
	own udpcall.OwnRef
	// wrShut: shutdown(SHUT_WR) happened; sends go to the kernel, which fails them with EPIPE.
	wrShut atomic.Bool
	// users counts the calls inside the transport; the inbox is unmapped only when the socket is
	// closed and no call uses it (a thread may still be in recv when another closes the fd).
	users transport.Users
	rxmu  sync.Mutex // one consumer of the inbox at a time; guards rx
	rx    rxStats
	// senderCache remembers the last multicast ring sender lookup (multicast.go); guarded by rxmu.
	senderCache senderCache
	route       atomic.Pointer[route]  // the last destination and how to reach it
	order       sendOrder              // the kernel sends a ring datagram follows (order.go)
	egress      atomic.Pointer[egress] // the last IPv6 group's route (multicast.go)

	kernelOnly atomic.Bool  // GiveUp happened: every call goes to the kernel socket
	rcvTimeo   atomic.Int64 // SO_RCVTIMEO in nanoseconds; 0: none
	waitAvg    wait.Avg     // how long blocking receives wait for data, typically (recv.go)
	// sleepers counts this process's threads asleep in the kernel waiting for the socket (a
	// blocking receive, select, poll, epoll_wait): senders skip the wake-up while one of our
	// threads spins, so a spinner that stops with data queued wakes them (ready.go).
	sleepers atomic.Int32

	rings  atomic.Uint64 // datagrams received from rings (Counts)
	osRx   atomic.Uint64 // datagrams received from the kernel socket
	ringTx atomic.Uint64 // datagrams sent into rings (a multicast datagram once per member)
	dups   atomic.Uint64 // kernel loopback copies of multicast datagrams that came through a ring

	// Multicast (multicast.go). joins is guarded by mu; joinSnap is its copy for the receive
	// path. pktinfoOn: the transport switched IP_PKTINFO on to see where kernel datagrams were
	// sent; pktinfoOwn: the program set IP_PKTINFO itself.
	joins      []join
	joinSnap   atomic.Pointer[[]joinKey]
	pktinfoOn  atomic.Bool
	pktinfoOwn bool
	pktOpt     [2]int // level and name of the pktinfo option (pktinfoOption): IP_PKTINFO or IPV6_RECVPKTINFO
	mcSender   bool   // the binding is flagged as a multicast ring sender
	// kernelLimit is the receive-buffer limit SO_RCVBUF gives (setLimit); rcvbufSet: the
	// program set SO_RCVBUF. A member of a group that kept the default gets the ring's capacity
	// (applyLimit, mclimit.go).
	kernelLimit atomic.Int64
	rcvbufSet   atomic.Bool

	spill udpcall.Spill // datagrams spilled at a fork (handover.go)

	capFD atomic.Int32 // the fd the socket got its port on, named in capture records (capture.go)
}

type discoveryEntry = discovery.Entry

// Counts reports what the socket received through rings and through the kernel, what it sent
// into rings, and how many kernel copies of multicast datagrams it dropped because a ring
// brought them.
type Counts struct{ RingRx, OSRx, RingTx, McastDups uint64 }

// NewUDP returns the transport of one UDP socket. nonblock reports the socket's O_NONBLOCK.
func (e *Env) NewUDP(nonblock func() bool) *UDP {
	u := &UDP{env: e, nonblock: nonblock}
	u.bell.Store(-1)
	return u
}

var _ transport.Transport = (*UDP)(nil)

// Kind is transport.KindSHM.
func (u *UDP) Kind() transport.Kind { return transport.KindSHM }

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
	fd := c.FD
	if u.lazy.Load() {
		u.lazyCall(fd)
	}
	var n int
	var errno syscall.Errno
	var viaOS bool
	if c.Op.Receive() {
		n, errno, viaOS = u.recv(&c, nil)
	} else if n, errno, viaOS = u.send(&c); viaOS && errno == 0 {
		u.kernelSent()
	}
	if viaOS && errno == 0 && capture.On() {
		c.FD = fd
		u.tapOS(&c, n)
	}
	return n, errno, viaOS
}

// Bound tells the socket that its kernel socket fd has a local address now (bind, connect, or the
// implicit bind of a first send): it opens its inbox and publishes its binding.
func (u *UDP) Bound(fd int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.takePortLocked(fd) {
		u.openLocked(fd)
	}
}

// takePortLocked records the kernel socket's local address; false when the socket is closed,
// went back to the kernel, or has no port yet. u.mu is held.
func (u *UDP) takePortLocked(fd int) bool {
	if u.closed || u.gaveUp != transport.ReasonNone {
		return false
	}
	local := sockname(fd)
	if !local.IsValid() || local.Port() == 0 {
		return false
	}
	u.local = local
	u.learnFamilyLocked(fd, local)
	u.capFD.Store(int32(fd))
	return true
}

// openLocked opens the socket's inbox, unless it has one, and publishes its binding. A lazy
// socket publishes only while none of our threads waits for it without the inbox (lazy.go);
// otherwise a later call publishes it. u.mu is held.
func (u *UDP) openLocked(fd int) {
	in := u.inbox.Load()
	if in == nil {
		var err error
		in, err = ring.CreateInbox(u.env.p.Dir, u.env.inboxName(), u.env.p.InboxSlots)
		if err != nil {
			u.lazy.Store(false)
			u.env.log.Info("shm: no inbox, the socket receives through the kernel only", zap.Int("fd", fd), zap.Error(err))
			return
		}
		in.Token() // chosen before anybody can find the inbox
		u.setLimit(fd, in)
		u.openRxStats(in, fd)
		u.inbox.Store(in)
	}
	if u.lazy.Load() && !u.publishable() {
		return
	}
	if u.lazy.Swap(false) {
		u.kernelFirst.Store(true)
	}
	u.publishLocked(fd, in)
}

// Connected tells the socket that its kernel socket is connected to peer (or disconnected, when
// peer is the zero value).
func (u *UDP) Connected(fd int, peer netip.AddrPort) {
	u.mu.Lock()
	u.peer = peer
	u.mu.Unlock()
	u.route.Store(nil)
	u.Bound(fd)
}

// setLimit gives the inbox the socket's receive-buffer limit: SO_RCVBUF as the kernel reports it
// (doubled), at least VMA_RX_BYTES_MIN.
func (u *UDP) setLimit(fd int, in *ring.Inbox) {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return
	}
	u.kernelLimit.Store(int64(max(v, u.env.p.RxBytesMin)))
	u.applyLimit(in)
}

// OptionSet tells the socket that the program set an option on its kernel socket; the ones the
// transport follows are read back from the kernel (SO_RCVTIMEO).
func (u *UDP) OptionSet(fd, level, name int) {
	if level == unix.SOL_SOCKET && (name == unix.SO_RCVBUF || name == unix.SO_RCVBUFFORCE) {
		u.rcvbufSet.Store(true)
		if u.enter() {
			if in := u.inbox.Load(); in != nil {
				u.setLimit(fd, in)
			}
			u.exit()
		}
	}
	if level == unix.IPPROTO_IP || level == unix.IPPROTO_IPV6 {
		u.ipOptionSet(fd, level, name)
	}
	if level == unix.SOL_SOCKET && (name == unix.SO_RCVTIMEO || name == unix.SO_RCVTIMEO_NEW) {
		if tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO); err == nil {
			u.rcvTimeo.Store(tv.Nano())
		}
		u.kernelReadUpdate() // the library's waits from now on have the new timeout
	}
}

// ensureBell returns the socket's doorbell, making it on first use. A sender that asked for a
// wake-up before the doorbell existed rang nobody: the wake-up is taken back (ClearWake), and the
// caller looks at the rings again before it sleeps. Without an fd to spare (EMFILE) the socket
// goes back to the kernel for good and -1 is returned.
func (u *UDP) ensureBell(in *ring.Inbox) int {
	if b := u.bell.Load(); b >= 0 {
		return int(b)
	}
	u.bellMu.Lock()
	defer u.bellMu.Unlock()
	if b := u.bell.Load(); b >= 0 {
		return int(b)
	}
	fd, err := openBell(in.Name())
	if err != nil {
		u.env.log.Info("shm: no doorbell, the socket goes back to the kernel", zap.String("inbox", in.Name()), zap.Error(err))
		u.GiveUp(transport.ReasonResources)
		return -1
	}
	u.bell.Store(int32(u.env.adopt(fd)))
	in.ClearWake()
	return int(u.bell.Load())
}

// ShutWrite tells the socket that the program shut it down for sending.
func (u *UDP) ShutWrite() {
	u.wrShut.Store(true)
	u.shutTx(false)
}

// Peer is the connected peer, or the zero value.
func (u *UDP) Peer() netip.AddrPort {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.peer
}

// entryLocked is the socket's binding as discovery publishes it; u.mu is held.
func (u *UDP) entryLocked(fd int, in *ring.Inbox) discovery.Entry {
	return discovery.Entry{Family: u.family, V6Only: u.v6only, Local: u.local, Peer: u.peer, Inbox: in.Name(),
		ReuseAddr:       optOn(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR),
		ReusePort:       optOn(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT),
		NoMulticastAll:  !u.multicastAll(fd),
		MulticastSender: u.mcSender}
}

// publishLocked publishes (or updates) the socket's binding and its memberships; u.mu is held.
func (u *UDP) publishLocked(fd int, in *ring.Inbox) {
	e := u.entryLocked(fd, in)
	if u.published {
		u.pub.Update(e)
	} else {
		h, err := u.env.dir.Publish(e)
		if err != nil {
			u.env.log.Info("shm: socket not published, senders reach it through the kernel", zap.Int("fd", fd), zap.Error(err))
			return
		}
		u.pub, u.published = h, true
	}
	if len(u.joins) > 0 {
		u.publishJoinsLocked(fd)
	}
}

// GiveUp sends the socket back to the kernel for good (an option the rings cannot honour): it is
// withdrawn from discovery, so senders use the kernel from now on.
func (u *UDP) GiveUp(r transport.Reason) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.giveUpLocked(r)
}

// giveUpLocked is GiveUp with u.mu held.
func (u *UDP) giveUpLocked(r transport.Reason) {
	defer u.spill.End() // a hand-over that made no spill region
	if u.gaveUp != transport.ReasonNone {
		return
	}
	u.gaveUp = r
	u.kernelOnly.Store(true)
	u.kernelReadOff()
	u.shutTx(false)
	if u.published {
		u.pub.Withdraw()
		u.published = false
	}
	u.withdrawJoinsLocked()
}

// multicastAll is the socket's IP_MULTICAST_ALL, or for an AF_INET6 socket IPV6_MULTICAST_ALL
// (discovery keeps one flag; it matters for sockets that did not join, which get a group's
// datagrams from the kernel); u.mu is held.
func (u *UDP) multicastAll(fd int) bool {
	if u.family == unix.AF_INET6 {
		return optOn(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL)
	}
	return optOn(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_ALL)
}

// RestoreOptions undoes what the transport set on the kernel socket fd for itself (IP_PKTINFO or
// IPV6_RECVPKTINFO), once the socket went back to the kernel: the program's own receives must
// not see it.
func (u *UDP) RestoreOptions(fd int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pktinfoOn.Load() && !u.pktinfoOwn {
		_ = unix.SetsockoptInt(fd, u.pktOpt[0], u.pktOpt[1], 0)
	}
	u.pktinfoOn.Store(false)
}

// GaveUp reports why the socket went back to the kernel, or ReasonNone.
func (u *UDP) GaveUp() transport.Reason {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.gaveUp
}

// Close withdraws the socket; its inbox is closed when the last call using it returns (its last
// fd is gone, but another thread may still be inside a call).
func (u *UDP) Close() {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return
	}
	u.closed = true
	u.shutTx(true)
	if u.published {
		u.pub.Withdraw()
		u.published = false
	}
	u.withdrawJoinsLocked()
	u.mu.Unlock()
	u.users.Close(u.release)
}

// enter marks a call using the socket; false when the socket is closed.
func (u *UDP) enter() bool { return u.users.Enter(u.release) }

// exit ends a call; the last one out of a closed socket releases the inbox.
func (u *UDP) exit() { u.users.Exit(u.release) }

// release closes the inbox and its doorbell (once, by Users).
func (u *UDP) release() {
	if in := u.inbox.Swap(nil); in != nil {
		_ = in.Close()
		u.env.closeFD(int(u.bell.Swap(-1)))
		u.own.Drop(true, u.env.closeFD)
		u.closeRxStats()
	}
}

// Inbox exposes the socket's inbox (nil before it has a port) to the engine's select, poll and
// epoll.
func (u *UDP) Inbox() *ring.Inbox { return u.inbox.Load() }

// Counts returns the socket's per-path receive counters.
func (u *UDP) Counts() Counts {
	return Counts{RingRx: u.rings.Load(), OSRx: u.osRx.Load(), RingTx: u.ringTx.Load(), McastDups: u.dups.Load()}
}

// dropped counts a datagram a ring dropped.
func (u *UDP) dropped() {
	if u.OnDrop != nil {
		u.OnDrop()
	}
}

func optOn(fd, level, name int) bool {
	v, err := unix.GetsockoptInt(fd, level, name)
	return err == nil && v != 0
}

// sockname is the kernel socket's local address: IPv4, or IPv6 (an IPv4-mapped one stays mapped).
func sockname(fd int) netip.AddrPort { return sysc.Sockname(fd) }

// familyLocked is the kernel socket's family, asked of the kernel while it has no local address
// yet. u.mu is held.
func (u *UDP) familyLocked(fd int) int {
	if u.family == 0 {
		if d := u.domain(fd); d != 0 {
			return d
		}
	}
	return u.family
}

// learnFamilyLocked records the kernel socket's family from its local address (an AF_INET6
// socket's is IPv6, mapped or not) and, for AF_INET6, IPV6_V6ONLY. u.mu is held.
func (u *UDP) learnFamilyLocked(fd int, local netip.AddrPort) {
	if local.Addr().Is4() {
		u.family, u.v6only = unix.AF_INET, false
		return
	}
	u.family, u.v6only = unix.AF_INET6, optOn(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
}

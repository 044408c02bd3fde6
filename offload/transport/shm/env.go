package shm

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/discovery"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/udpcall"
	"github.com/goxio/goxio/stats"
)

// Params are the parameters the transport follows (VMA_* names in conf.Params).
type Params struct {
	Dir                 string // where segments live (/dev/shm)
	RxPoll              int    // VMA_RX_POLL: polls of an empty socket before sleeping; -1 forever
	RxUDPPollOSRatio    int    // VMA_RX_UDP_POLL_OS_RATIO: kernel socket checked every N polls; 0 never while polling
	RxBytesMin          int    // VMA_RX_BYTES_MIN: smallest ring
	TxNonblockedEagains bool   // VMA_TX_NONBLOCKED_EAGAINS
	InboxSlots          int    // senders one inbox accepts at once
	// Signals returns the calling thread's signal-handler counters; nil: none (a signal during
	// polling then only ends the call once the poll budget is spent and the call sleeps).
	Signals func() *transport.SigCounters
	// AdoptFD makes one of the transport's own fds internal (invisible to the program, placed
	// high) and returns its number; ReleaseFD undoes it before the fd is closed. nil: the fds
	// stay as they are (tests).
	AdoptFD   func(fd int) int
	ReleaseFD func(fd int)
	// Stats, when set, gets one ring slot per inbox and per outlet (counters, depth, drops,
	// wake-ups), shown by goxio_stats.
	Stats RingSlots
	// QuietSysmon gives the Go runtime's monitor thread SCHED_IDLE (udpcall.QuietSysmon): its
	// wake-ups preempt polling threads and make the p99.9 of a ping-pong. On a saturated
	// machine an idle-class monitor is slow to hand a processor to a thread calling into the
	// library when every P is held, so the library gives it its class back once many threads
	// call in (udpcall.LoudSysmon, shim/threads.go). The library sets it from GOXIO_SHM_SYSMON
	// (conf.Params.SHMSysmon: true unless "normal").
	QuietSysmon bool
	// SysmonGuard keeps the idle class to the monitor (threads it starts get its former class)
	// and says whether it can be given back; nil: neither (tests).
	SysmonGuard udpcall.Guard
	// KernelRoute, when set, is told of every unicast destination that no goxio socket is bound
	// to, at the directory generation gen read before the look: until the generation changes,
	// a send to it is the kernel's sendto, unchanged (the library's sending trampoline then
	// makes it without entering the engine: shim/preload/ksend.c).
	KernelRoute func(dst netip.AddrPort, gen uint64)
	// ListenerSeen, when set, is told of every destination of a connect and whether a goxio
	// process listens there, with the directory's generation read before the look-up (the
	// preload library's connect then makes the next such connections plain kernel ones, late.c,
	// or serves their early phase in C, early.c).
	ListenerSeen func(dst netip.AddrPort, gen uint64, goxio bool)
	// RingRoute, when set, is handed the ring route an fd's send just took: the library's
	// sending trampoline makes the fd's next sends there itself while the route holds
	// (rsend.go, shim/preload/rsend.c). Set by UseRingRoute.
	RingRoute func(fd int, r *TxRoute)
}

// UseRingRoute sets Params.RingRoute; before the first send only (the engine's start-up).
func (e *Env) UseRingRoute(f func(fd int, r *TxRoute)) { e.p.RingRoute = f }

// Env is the transport's process-wide state: the discovery directory, the outlets this process
// opened towards other sockets' inboxes, the source-address cache.
type Env struct {
	p   Params
	dir *discovery.Dir
	log *zap.Logger
	pid int

	ringBytes int
	nextInbox atomic.Uint64

	ringerOnce sync.Once
	ringer     int // the socket that rings other inboxes' doorbells; made at the first wake-up

	mu          sync.Mutex
	outlets     map[string]*outlet
	outletsKept int // outlets left by the last sweep (outlets.go)
	sources     map[netip.Addr]netip.Addr
}

// quietSysmonOnce: the monitor thread is looked for once per process.
var quietSysmonOnce sync.Once

// NewEnv opens the discovery directory of this user and network namespace.
func NewEnv(p Params, log *zap.Logger) (*Env, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if p.InboxSlots <= 0 {
		p.InboxSlots = 64
	}
	ns, err := discovery.NetNS()
	if err != nil {
		return nil, fmt.Errorf("shm transport: %w", err)
	}
	d, err := discovery.Open(p.Dir, unix.Geteuid(), ns)
	if err != nil {
		return nil, fmt.Errorf("shm transport: %w", err)
	}
	if p.QuietSysmon {
		quietSysmonOnce.Do(func() {
			if tid, err := udpcall.QuietSysmon(p.SysmonGuard); err != nil {
				log.Info("shm: the Go runtime's monitor thread keeps its priority (its wake-ups raise polling threads' tail latency)", zap.Error(err))
			} else {
				log.Debug("shm: the Go runtime's monitor thread runs SCHED_IDLE", zap.Int("tid", tid))
				if udpcall.SysmonSlackSet() {
					log.Debug("shm: the monitor thread's sleeps end with the next interrupt of its CPU",
						zap.Duration("timer slack", udpcall.SysmonSlack))
				}
			}
		})
	}
	rb := 1 << 18
	for rb < p.RxBytesMin {
		rb <<= 1
	}
	return &Env{p: p, dir: d, log: log, pid: unix.Getpid(), ringBytes: rb, ringer: -1,
		outlets: map[string]*outlet{}, sources: map[netip.Addr]netip.Addr{}}, nil
}

// ringerFD returns the socket that rings doorbells, made on first use (-1 if it cannot be).
func (e *Env) ringerFD() int {
	e.ringerOnce.Do(func() {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			e.log.Warn("shm: no doorbell socket: sleeping receivers wake only with kernel traffic", zap.Error(err))
			return
		}
		e.ringer = e.adopt(fd)
	})
	return e.ringer
}

func (e *Env) adopt(fd int) int {
	if e.p.AdoptFD != nil {
		return e.p.AdoptFD(fd)
	}
	return fd
}

func (e *Env) closeFD(fd int) {
	if fd < 0 {
		return
	}
	if e.p.ReleaseFD != nil {
		e.p.ReleaseFD(fd)
	}
	unix.Close(fd)
}

// Close releases the process's outlets (at exit). The directory stays mapped: other threads
// may still be running and looking destinations up while the process exits.
func (e *Env) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, o := range e.outlets {
		e.dropOutletLocked(name, o)
	}
	ring.DrainRingPool() // the rings kept for reuse, once no outlet uses them
}

// outlet returns this process's outlet towards an inbox, opening it on first use; nil when the
// inbox cannot take another sender or is gone.
func (e *Env) outlet(inbox string) *outlet { return e.outletSized(inbox, e.ringBytes) }

// outletSized is outlet with the ring's data capacity for a new outlet (an existing one is
// returned as it is).
func (e *Env) outletSized(inbox string, ringBytes int) *outlet {
	e.mu.Lock()
	defer e.mu.Unlock()
	if o := e.outlets[inbox]; o != nil {
		if !o.Closed() {
			return o
		}
		e.dropOutletLocked(inbox, o)
	}
	e.sweepOutletsLocked()
	ro, err := ring.DialInbox(e.p.Dir, inbox, ringBytes)
	if err != nil {
		e.log.Debug("shm: no ring to inbox", zap.String("inbox", inbox), zap.Error(err))
		return nil
	}
	o := &outlet{Outlet: ro}
	if e.p.Stats != nil {
		o.st = e.p.Stats.OpenRing(stats.TransportSHM, "tx "+inbox)
		ro.CountInto(o.st.TxWords(), o.st.WakeSentWord())
	}
	e.outlets[inbox] = o
	return o
}

// dropOutletLocked closes an outlet and frees its statistics ring; e.mu is held.
func (e *Env) dropOutletLocked(inbox string, o *outlet) {
	_ = o.Close()
	if e.p.Stats != nil && o.st != nil {
		e.p.Stats.CloseRing(o.st)
	}
	delete(e.outlets, inbox)
}

// inboxName names a new inbox of this process.
func (e *Env) inboxName() string {
	return fmt.Sprintf("goxio.%d.in.%d.%d", unix.Geteuid(), e.pid, e.nextInbox.Add(1))
}

// source is the address the kernel would put as the source of a datagram to dst from a socket
// bound to the wildcard address: the preferred source of the route to dst.
func (e *Env) source(dst netip.Addr) netip.Addr {
	e.mu.Lock()
	src, ok := e.sources[dst]
	e.mu.Unlock()
	if ok {
		return src
	}
	src = routeSource(dst)
	if src.IsValid() {
		e.mu.Lock()
		e.sources[dst] = src
		e.mu.Unlock()
	}
	return src
}

// routeSource asks the kernel: a connected scratch socket's local address.
func routeSource(dst netip.Addr) netip.Addr {
	family := unix.AF_INET6
	var to unix.Sockaddr = &unix.SockaddrInet6{Port: 9, Addr: dst.As16()}
	if dst.Is4() {
		family, to = unix.AF_INET, &unix.SockaddrInet4{Port: 9, Addr: dst.As4()}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return netip.Addr{}
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, to); err != nil {
		return netip.Addr{}
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.Addr{}
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrFrom4(a.Addr)
	case *unix.SockaddrInet6:
		return netip.AddrFrom16(a.Addr)
	}
	return netip.Addr{}
}

// GenWord returns the discovery directory's generation word (discovery.Dir.GenWord): it stays
// mapped for the process's life.
func (e *Env) GenWord() *uint64 { return e.dir.GenWord() }

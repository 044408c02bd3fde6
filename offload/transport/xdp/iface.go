package xdp

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/xdp"
	"github.com/goxio/goxio/offload/xdp/packet"
)

// ErrNotOffloaded is wrapped by the reasons an interface stays with the kernel that are not the
// xdp package's own errors (not in Params.Interfaces, not Ethernet, missing capabilities).
var ErrNotOffloaded = errors.New("interface not offloaded")

// ErrNoCapabilities is wrapped (with ErrNotOffloaded) when the process lacks a capability the
// AF_XDP path needs.
var ErrNoCapabilities = errors.New("missing capabilities")

// ErrNoXDP is wrapped when the interface or the kernel refused the steering program or the
// AF_XDP sockets for another reason than another program on the interface or missing
// privileges: no XDP or AF_XDP mode works there (or not the one GOXIO_XDP_MODE asked for).
var ErrNoXDP = errors.New("no XDP support")

// noXDP wraps an attach or bind error with ErrNoXDP unless it is about another program on the
// interface or privileges.
func noXDP(err error) error {
	if errors.Is(err, xdp.ErrBusy) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrNoXDP, err)
}

// FallbackReason is the transport.Reason of an error of Fallback or InterfaceState: another XDP
// program on the interface, missing capabilities, no XDP support, or (anything else) no faster
// path.
func FallbackReason(err error) transport.Reason {
	switch {
	case err == nil:
		return transport.ReasonNone
	case errors.Is(err, xdp.ErrBusy):
		return transport.ReasonInterfaceBusy
	case errors.Is(err, ErrNoCapabilities) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		return transport.ReasonNoCapabilities
	case errors.Is(err, ErrNoXDP) || errors.Is(err, xdp.ErrNotSupported):
		return transport.ReasonNoXDP
	}
	return transport.ReasonNoFasterPath
}

// iface is one interface the Env looked at: offloaded (prog and queues set) or not (err says
// why). Its fields do not change once ifaceLocked returned it, until Env.Close.
type iface struct {
	index  int
	name   string
	link   packet.Link
	prog   *xdp.Program
	queues []*xsk
	err    error
}

// xsk is one AF_XDP socket (one queue of one interface) with the state of its two sides.
type xsk struct {
	s     *xdp.Socket
	ifc   *iface
	queue int

	rxmu  sync.Mutex  // the receive side: Receive, Release, bufs and free
	batch []xdp.Frame // Receive's scratch
	bufs  []rxBuf     // one per RX frame: a held frame waiting in a socket's queue
	free  []int32     // indices of unused bufs

	txmu sync.Mutex // the transmit side: Alloc, Transmit, Free, Complete, and the fields below
	tx   [1]xdp.Frame
	// Batched kicks (kick.go): frames posted since the last kick, whether the Env counts x in
	// its dirty sockets, when the last ring send ended (Nanotime), and x's Kicker slot (nil:
	// every send kicks at once).
	unkicked int
	dirty    bool
	lastEnd  int64
	slot     *atomic.Int64

	rs ringStats // its ring in the statistics segment
}

// rxBatch is how many frames one poll takes from an RX ring.
const rxBatch = 32

// ifaceLocked returns the Env's view of interface ifindex, attaching the steering program and
// opening the AF_XDP sockets of its queues the first time; e.mu is held.
func (e *Env) ifaceLocked(ifindex int) *iface {
	if ifc := e.ifaces[ifindex]; ifc != nil {
		return ifc
	}
	ifc := &iface{index: ifindex}
	e.ifaces[ifindex] = ifc
	ifc.err = e.offloadLocked(ifc)
	if ifc.err != nil {
		quiet := errors.Is(ifc.err, ErrNotOffloaded) && !errors.Is(ifc.err, ErrNoCapabilities)
		e.sayOnceLocked(fmt.Sprint("if", ifindex), quiet, "xdp: interface stays with the kernel",
			zap.Int("ifindex", ifindex), zap.String("ifname", ifc.name), zap.Error(ifc.err))
		return ifc
	}
	all := append(slices.Clone(*e.xsks.Load()), ifc.queues...)
	e.xsks.Store(&all)
	e.log.Info("xdp: interface offloaded", zap.String("ifname", ifc.name), zap.Stringer("mode", ifc.prog.Mode()),
		zap.Int("queues", len(ifc.queues)), zap.Bool("zerocopy", ifc.queues[0].s.ZeroCopy()))
	return ifc
}

// offloadLocked attaches the program and opens the queues; the error says why not.
func (e *Env) offloadLocked(ifc *iface) error {
	if e.closed {
		return fmt.Errorf("offload interface %d: environment closed: %w", ifc.index, ErrNotOffloaded)
	}
	nl, err := e.nlLocked()
	if err != nil {
		return fmt.Errorf("offload interface %d: %w", ifc.index, err)
	}
	l, err := nl.LinkByIndex(ifc.index)
	if err != nil {
		return fmt.Errorf("offload interface %d: %w", ifc.index, err)
	}
	ifc.link, ifc.name = l, l.Name
	if len(e.p.Interfaces) > 0 && !slices.Contains(e.p.Interfaces, l.Name) {
		return fmt.Errorf("offload %s: not in the configured interfaces: %w", l.Name, ErrNotOffloaded)
	}
	if !l.Ethernet() {
		return fmt.Errorf("offload %s: not an Ethernet interface: %w", l.Name, ErrNotOffloaded)
	}
	if missing, err := xdp.MissingCapabilities(); err != nil {
		return fmt.Errorf("offload %s: %w", l.Name, err)
	} else if len(missing) > 0 {
		return fmt.Errorf("offload %s: %w %s: %w", l.Name, ErrNoCapabilities, strings.Join(missing, ", "), ErrNotOffloaded)
	}
	var prog *xdp.Program
	err = e.openHigh(func() (err error) {
		prog, err = xdp.Attach(nl, ifc.index, e.p.Program)
		return err
	})
	if err != nil {
		return fmt.Errorf("offload %s: %w", l.Name, noXDP(err))
	}
	for _, fd := range prog.FDs() {
		e.markFD(fd)
	}
	for q := 0; q < prog.Queues(); q++ {
		// Opened where its descriptor lands out of the program's numbers, then moved to the top.
		var s *xdp.Socket
		err := e.openHigh(func() (err error) {
			s, err = xdp.Open(ifc.index, q, e.p.Socket)
			return err
		})
		if err == nil {
			s.Adopt(e.adopt)
			err = prog.Register(s)
			if err != nil {
				e.releaseFD(s.FD())
				s.Close()
			}
		}
		if err != nil && q > 0 && errors.Is(err, unix.EINVAL) {
			// The interface has fewer active queues than it could have (a veth made with
			// the default queue count has one active of one per CPU): bind refuses the
			// inactive ones. Frames steered on those go to the kernel.
			break
		}
		if err != nil {
			for _, x := range ifc.queues {
				e.releaseKickSlot(x)
				e.closeStats(x)
				e.releaseFD(x.s.FD())
				x.s.Close()
			}
			ifc.queues = nil
			for _, fd := range prog.FDs() {
				e.releaseFD(fd)
			}
			prog.Close()
			return fmt.Errorf("offload %s queue %d: %w", l.Name, q, noXDP(err))
		}
		x := newXsk(s, ifc, q, e.p.Socket)
		e.openStats(x)
		e.kickSlot(x)
		ifc.queues = append(ifc.queues, x)
	}
	ifc.prog = prog
	return nil
}

func newXsk(s *xdp.Socket, ifc *iface, q int, cfg xdp.Config) *xsk {
	n := cfg.RxFrames
	if n <= 0 {
		n = xdp.DefaultRxFrames
	}
	x := &xsk{s: s, ifc: ifc, queue: q, batch: make([]xdp.Frame, rxBatch), bufs: make([]rxBuf, n), free: make([]int32, n)}
	for i := range x.free {
		x.free[i] = int32(n - 1 - i)
		x.bufs[i].x = x
		x.bufs[i].idx = int32(i)
	}
	return x
}

// close detaches the program and closes the sockets.
func (ifc *iface) close() error {
	var first error
	for _, x := range ifc.queues {
		x.rxmu.Lock()
		x.txmu.Lock()
		if err := x.s.Close(); err != nil && first == nil {
			first = err
		}
		x.txmu.Unlock()
		x.rxmu.Unlock()
	}
	ifc.queues = nil
	if ifc.prog != nil {
		if err := ifc.prog.Close(); err != nil && first == nil {
			first = err
		}
		ifc.prog = nil
	}
	return first
}

// InterfaceState reports whether the Env offloads interface ifindex, looking at it (and
// attaching) if it has not yet; the error says why not.
func (e *Env) InterfaceState(ifindex int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ifaceLocked(ifindex).err
}

// Serves reports whether a socket with local address local and peer remote (the zero value:
// none yet) belongs on this transport when another ring transport could take it too: its
// traffic leaves through an interface the Env offloads (the route to remote; without a remote,
// the interface that has the bound address). Wildcard and loopback receivers are not served:
// their peers may be on this host.
func (e *Env) Serves(local, remote netip.AddrPort) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	if dst := remote.Addr().Unmap(); remote.IsValid() && !dst.IsUnspecified() {
		if dst.IsLoopback() || dst.Is6() && dst.IsMulticast() {
			return false
		}
		var hint netip.Addr
		if l := local.Addr().Unmap(); l.IsValid() && !l.IsUnspecified() && l.Is4() == dst.Is4() {
			hint = l
		}
		nl, err := e.nlLocked()
		if err != nil {
			return false
		}
		rt, err := nl.RouteGet(dst, hint, 0)
		if err != nil || rt.Type != packet.RouteUnicast && rt.Type != packet.RouteMulticast {
			return false
		}
		return e.ifaceLocked(rt.Ifindex).err == nil
	}
	a := local.Addr().Unmap().WithZone("")
	if !a.IsValid() || a.IsUnspecified() || a.IsLoopback() {
		return false
	}
	addrs, err := e.addrsLocked()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		if ia.addr == a {
			return e.ifaceLocked(ia.ifindex).err == nil
		}
	}
	return false
}

// defaultHopLimit is the kernel's default IPv6 hop limit (net.ipv6.conf.*.hop_limit).
const defaultHopLimit = 64

// hopLimit is the hop limit the kernel gives IPv6 datagrams out of the interface from sockets
// that did not set one (net.ipv6.conf.IFACE.hop_limit, read at each route lookup: an
// administrator may change it).
func (ifc *iface) hopLimit() int {
	return procInt("/proc/sys/net/ipv6/conf/"+ifc.name+"/hop_limit", defaultHopLimit)
}

// procInt reads the decimal number in a /proc file, def when it cannot.
func procInt(path string, def int) int {
	var buf [32]byte // a number: sysc.ReadFile's 16 KiB buffer per read (every route miss) buys nothing
	b, err := procstat.ReadPath(path, buf[:])
	if err != nil {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return def
	}
	return n
}

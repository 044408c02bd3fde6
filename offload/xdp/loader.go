package xdp

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/xdp/packet"
)

// Options tune Attach. The zero value is valid.
type Options struct {
	// FlowCapacity is the number of unicast flows the flow map holds
	// (DefaultFlowCapacity when 0).
	FlowCapacity int
	// GroupCapacity is the number of multicast (group, port) entries
	// (DefaultGroupCapacity when 0).
	GroupCapacity int
	// Queues is the number of receive queues that can have a socket (the interface's
	// receive queue count when 0).
	Queues int
	// Mode restricts the attach mode: ModeNative or ModeGeneric only; any other value
	// (ModeNone, the zero value) tries native mode, then generic mode.
	Mode Mode
}

// Program is the steering program attached to one interface, with its maps (maps, program
// load and bpf_link through cilium/ebpf). Its methods are safe for concurrent use (every map
// update is one bpf(2) call); Close must not run concurrently with the others.
//
// Descriptors: Attach opens the maps, the program, the link, and short-lived ones (cilium's
// feature probes, the program's /proc/self/fdinfo); a caller inside a program runs it where
// those land out of the program's numbers (offload.OpenHigh) and marks FDs internal. The other
// methods open none.
type Program struct {
	ifindex int
	ifname  string
	queues  int
	mode    Mode
	id      uint32
	prog    *ebpf.Program // nil when closed
	link    link.Link     // nil when detached
	maps    *maps
}

// Attach loads the steering program and attaches it to interface ifindex (in the
// network namespace of nl, the netlink connection it reads the interface through)
// through a bpf_link: the kernel detaches it when the link's last file descriptor
// closes, so also when the process dies, SIGKILL included. Native mode is tried first,
// then generic mode; Mode reports which one worked.
//
// An interface that already has an XDP program gives a *BusyError (errors.Is(err,
// ErrBusy)). Without CAP_NET_ADMIN and CAP_BPF (or CAP_SYS_ADMIN) the error wraps
// unix.EPERM.
func Attach(nl *packet.Conn, ifindex int, opts Options) (*Program, error) {
	l, err := LinkByIndex(nl, ifindex)
	if err != nil {
		return nil, fmt.Errorf("xdp attach: %w", err)
	}
	if l.XDPMode != ModeNone {
		return nil, fmt.Errorf("xdp attach: %w", busyError(l))
	}
	queues := opts.Queues
	if queues <= 0 {
		queues = max(l.RxQueues, 1)
	}
	p, err := load(opts.FlowCapacity, opts.GroupCapacity, queues)
	if err != nil {
		return nil, fmt.Errorf("xdp attach %s: %w", l.Name, err)
	}
	p.ifindex, p.ifname = ifindex, l.Name
	var nativeErr error
	if opts.Mode != ModeGeneric {
		p.link, nativeErr = attachXDP(p.prog, ifindex, link.XDPDriverMode)
		if nativeErr == nil {
			p.mode = ModeNative
			return p, nil
		}
		if isBusy(nativeErr) {
			p.Close()
			return nil, fmt.Errorf("xdp attach: %w", busyAfter(nl, l, nativeErr))
		}
	}
	if opts.Mode == ModeNative {
		p.Close()
		return nil, fmt.Errorf("xdp attach %s: native mode: %w", l.Name, nativeErr)
	}
	var genericErr error
	p.link, genericErr = attachXDP(p.prog, ifindex, link.XDPGenericMode)
	if genericErr == nil {
		p.mode = ModeGeneric
		return p, nil
	}
	p.Close()
	if isBusy(genericErr) {
		return nil, fmt.Errorf("xdp attach: %w", busyAfter(nl, l, genericErr))
	}
	if nativeErr != nil {
		return nil, fmt.Errorf("xdp attach %s: native mode: %v; generic mode: %w", l.Name, nativeErr, genericErr)
	}
	return nil, fmt.Errorf("xdp attach %s: generic mode: %w", l.Name, genericErr)
}

// load creates the maps and loads the steering program, without attaching it.
func load(flowCap, groupCap, queues int) (*Program, error) {
	if flowCap <= 0 {
		flowCap = DefaultFlowCapacity
	}
	if groupCap <= 0 {
		groupCap = DefaultGroupCapacity
	}
	m, err := newMaps(flowCap, groupCap, queues)
	if err != nil {
		return nil, err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: progName, Type: ebpf.XDP, AttachType: ebpf.AttachXDP,
		Instructions: steeringInstructions(m.flows.FD(), m.flows6.FD(), m.groups.FD(), m.xsks.FD()), License: "MIT"})
	if err != nil {
		m.close()
		return nil, fmt.Errorf("bpf program load %s: %w", progName, err)
	}
	p := &Program{queues: queues, prog: prog, maps: m}
	if p.id, err = progID(prog); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// attachXDP attaches prog to interface ifindex with a bpf_link in the given mode; the kernel
// detaches the program when the last reference to the link closes.
func attachXDP(prog *ebpf.Program, ifindex int, mode link.XDPAttachFlags) (link.Link, error) {
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: mode})
	if err != nil {
		return nil, fmt.Errorf("bpf link create: %w", err)
	}
	return l, nil
}

// progID returns the kernel's id of prog.
func progID(prog *ebpf.Program) (uint32, error) {
	info, err := prog.Info()
	if err != nil {
		return 0, fmt.Errorf("bpf program info: %w", err)
	}
	id, ok := info.ID()
	if !ok {
		return 0, fmt.Errorf("bpf program info: no id: %w", ErrNotSupported)
	}
	return uint32(id), nil
}

// progNameByID returns the name of the loaded BPF program with the given id.
func progNameByID(id uint32) (string, error) {
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return "", fmt.Errorf("bpf program %d: %w", id, err)
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		return "", fmt.Errorf("bpf program %d info: %w", id, err)
	}
	return info.Name, nil
}

// isBusy reports whether an attach error says the interface already has a program
// (EBUSY: a program or link in the same mode; EEXIST: one in the other mode).
func isBusy(err error) bool {
	return errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST)
}

// busyAfter builds the BusyError for an attach that lost the race with another
// attacher, asking the kernel again who it is.
func busyAfter(nl *packet.Conn, l Link, attachErr error) error {
	if now, err := LinkByIndex(nl, l.Index); err == nil && now.XDPMode != ModeNone {
		return busyError(now)
	}
	return fmt.Errorf("%s: %w (%w)", l.Name, ErrBusy, attachErr)
}

// busyError describes the XDP program attached to l.
func busyError(l Link) *BusyError {
	e := &BusyError{Ifindex: l.Index, Ifname: l.Name, ProgID: l.XDPProgID, Mode: l.XDPMode}
	if l.XDPProgID != 0 {
		e.ProgName, _ = progNameByID(l.XDPProgID)
	}
	return e
}

// Ifindex returns the index of the interface the program is attached to.
func (p *Program) Ifindex() int { return p.ifindex }

// Mode returns how the program is attached: ModeNative or ModeGeneric.
func (p *Program) Mode() Mode { return p.mode }

// Queues returns the number of receive queues that can have a socket (0..Queues-1).
func (p *Program) Queues() int { return p.queues }

// ID returns the kernel's id of the program (bpftool prog show id ID).
func (p *Program) ID() uint32 { return p.id }

// AddFlow steers the unicast UDP datagrams to dst (an IPv4 or IPv6 address and port)
// arriving on the interface to the socket of their receive queue. Adding a flow that is
// already there keeps it and its hit count.
func (p *Program) AddFlow(dst netip.AddrPort) error {
	m, k, err := p.flowEntry(dst)
	if err != nil {
		return fmt.Errorf("xdp add flow: %w", err)
	}
	if err := m.Update(k, uint64(0), ebpf.UpdateNoExist); err != nil && !errors.Is(err, ebpf.ErrKeyExist) {
		return fmt.Errorf("xdp add flow %v: %w", dst, err)
	}
	return nil
}

// flowEntry returns the map and key of flow dst: the IPv4 flow map for an IPv4 address, the
// IPv6 one for an IPv6 address (an IPv4-mapped address is refused: such datagrams are IPv4
// on the wire).
func (p *Program) flowEntry(dst netip.AddrPort) (*ebpf.Map, any, error) {
	if dst.Addr().Is4() {
		k, err := flowKey(dst.Addr(), dst.Port())
		return p.maps.flows, k, err
	}
	k, err := flow6Key(dst.Addr(), dst.Port())
	return p.maps.flows6, k, err
}

// RemoveFlow stops steering dst; removing a flow that is not there is not an error.
func (p *Program) RemoveFlow(dst netip.AddrPort) error {
	m, k, err := p.flowEntry(dst)
	if err != nil {
		return fmt.Errorf("xdp remove flow: %w", err)
	}
	if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("xdp remove flow %v: %w", dst, err)
	}
	return nil
}

// FlowHits returns how many frames matched flow dst since it was added (whether or
// not a socket was registered for their queue).
func (p *Program) FlowHits(dst netip.AddrPort) (uint64, error) {
	m, k, err := p.flowEntry(dst)
	if err != nil {
		return 0, fmt.Errorf("xdp flow hits: %w", err)
	}
	var v uint64
	if err := m.Lookup(k, &v); err != nil {
		return 0, fmt.Errorf("xdp flow hits %v: %w", dst, err)
	}
	return v, nil
}

// AddGroup steers the datagrams sent to multicast group on UDP port port (every port
// when port is 0). The group must be an IPv4 multicast address; the caller joins it on
// a kernel socket too, so that IGMP and the switch see the membership.
func (p *Program) AddGroup(group netip.Addr, port uint16) error {
	if !group.Is4() || !group.IsMulticast() {
		return fmt.Errorf("xdp add group %v: not an IPv4 multicast address: %w", group, unix.EINVAL)
	}
	k, _ := flowKey(group, port)
	if err := p.maps.groups.Update(k, uint64(0), ebpf.UpdateNoExist); err != nil && !errors.Is(err, ebpf.ErrKeyExist) {
		return fmt.Errorf("xdp add group %v port %d: %w", group, port, err)
	}
	return nil
}

// RemoveGroup stops steering group on port (the entry added with the same port).
func (p *Program) RemoveGroup(group netip.Addr, port uint16) error {
	k, err := flowKey(group, port)
	if err != nil {
		return fmt.Errorf("xdp remove group: %w", err)
	}
	if err := p.maps.groups.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("xdp remove group %v port %d: %w", group, port, err)
	}
	return nil
}

// GroupHits returns how many frames matched the group entry (group, port).
func (p *Program) GroupHits(group netip.Addr, port uint16) (uint64, error) {
	k, err := flowKey(group, port)
	if err != nil {
		return 0, fmt.Errorf("xdp group hits: %w", err)
	}
	var v uint64
	if err := p.maps.groups.Lookup(k, &v); err != nil {
		return 0, fmt.Errorf("xdp group hits %v port %d: %w", group, port, err)
	}
	return v, nil
}

// Register makes s receive the steered frames of its queue. s must be bound to the
// program's interface; a socket registered before for that queue is replaced. The
// kernel drops the entry by itself when s is closed.
func (p *Program) Register(s *Socket) error {
	if s.Ifindex() != p.ifindex {
		return fmt.Errorf("xdp register queue %d: socket is bound to interface %d, program to %d: %w", s.Queue(), s.Ifindex(), p.ifindex, unix.EINVAL)
	}
	if s.Queue() >= p.queues {
		return fmt.Errorf("xdp register queue %d: program has %d queues: %w", s.Queue(), p.queues, unix.EINVAL)
	}
	if err := p.maps.xsks.Update(uint32(s.Queue()), uint32(s.FD()), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("xdp register queue %d: %w", s.Queue(), err)
	}
	return nil
}

// Unregister sends the steered frames of queue to the kernel again.
func (p *Program) Unregister(queue int) error {
	if queue < 0 || queue >= p.queues {
		return fmt.Errorf("xdp unregister queue %d: program has %d queues: %w", queue, p.queues, unix.EINVAL)
	}
	if err := p.maps.xsks.Delete(uint32(queue)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("xdp unregister queue %d: %w", queue, err)
	}
	return nil
}

// Close detaches the program from the interface and releases it and its maps.
// Sockets stay open; they simply receive nothing more.
func (p *Program) Close() error {
	var first error
	if p.link != nil {
		if err := p.link.Close(); err != nil {
			first = fmt.Errorf("xdp detach %s: %w", p.ifname, err)
		}
		p.link = nil
	}
	if p.prog != nil {
		if err := p.prog.Close(); err != nil && first == nil {
			first = fmt.Errorf("xdp close program: %w", err)
		}
		p.prog = nil
	}
	if p.maps != nil {
		if err := p.maps.close(); err != nil && first == nil {
			first = fmt.Errorf("xdp close maps: %w", err)
		}
		p.maps = nil
	}
	return first
}

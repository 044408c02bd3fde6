package xdp

import (
	"fmt"
	"net/netip"

	"go.uber.org/zap"
)

// binding is what the demultiplexer needs of one socket. A binding is never changed once
// published in a demuxTable: a change publishes a new one.
type binding struct {
	local netip.AddrPort
	peer  netip.AddrPort // zero: not connected
	joins []join
	// mcAll is IP_MULTICAST_ALL: the socket receives every group joined on the host for its
	// port, not only its own.
	mcAll bool
	// v6 is set for an AF_INET6 socket (local and peer are then 16-byte addresses, IPv4 ones
	// mapped), v6only when it has IPV6_V6ONLY (no IPv4 datagram for it).
	v6, v6only bool
}

// takes reports whether the socket's local address receives datagrams to dst (an address as
// on the wire: 4 bytes for IPv4, 16 for IPv6), as the kernel decides: an AF_INET socket takes
// IPv4 only; an AF_INET6 one bound to :: takes IPv6 and, without IPV6_V6ONLY, IPv4; one bound
// to a v4-mapped address takes that IPv4 address (::ffff:0.0.0.0: any); one bound to an IPv6
// address takes that address.
func (b *binding) takes(dst netip.Addr) bool {
	l := b.local.Addr().WithZone("")
	if !b.v6 {
		return dst.Is4() && (l.IsUnspecified() || l == dst)
	}
	if dst.Is4() {
		if b.v6only {
			return false
		}
		return l.IsUnspecified() || l.Is4In6() && (l.Unmap().IsUnspecified() || l.Unmap() == dst)
	}
	return !l.Is4In6() && (l.IsUnspecified() || l == dst)
}

// specific reports whether the socket is bound to one address (not a wildcard of any family).
func (b *binding) specific() bool {
	l := b.local.Addr().Unmap()
	return !l.IsUnspecified()
}

// from reports whether a connected socket takes a datagram from src (any socket that is not
// connected does): its peer, a v4-mapped peer matching the IPv4 source.
func (b *binding) from(src netip.AddrPort) bool {
	return !b.peer.IsValid() || b.peer.Port() == src.Port() && b.peer.Addr().Unmap().WithZone("") == src.Addr()
}

// join is one multicast membership: source is zero for any-source.
type join struct {
	group, source netip.Addr
}

// demuxTable maps a local port to the sockets bound to it. Readers load it lock-free; writers
// build a new one under Env.mu.
type demuxTable struct {
	byPort map[uint16][]member
}

type member struct {
	u *UDP
	b *binding
}

// publishLocked installs u's new binding (nil: u goes away): it registers the flows and groups
// the binding needs in the steering programs, drops those it no longer needs, and rebuilds the
// demultiplexing table; e.mu is held. It returns the reason the socket receives through the
// kernel only, nil when at least one flow or group is steered to it.
func (e *Env) publishLocked(u *UDP, b *binding) error {
	var flows []flowKey
	var groups []groupKey
	var why error
	if b != nil && !e.closed {
		flows, groups, why = e.needsLocked(b)
	}
	for _, f := range flows {
		if e.flows[f]++; e.flows[f] == 1 {
			if err := e.ifaces[f.ifindex].prog.AddFlow(f.dst); err != nil {
				e.log.Info("xdp: flow not steered", zap.Stringer("dst", f.dst), zap.Error(err))
				why = fmt.Errorf("steer %v: %w", f.dst, err)
			}
		}
	}
	for _, g := range groups {
		if e.groups[g]++; e.groups[g] == 1 {
			if err := e.ifaces[g.ifindex].prog.AddGroup(g.group, g.port); err != nil {
				e.log.Info("xdp: group not steered", zap.Stringer("group", g.group), zap.Error(err))
				why = fmt.Errorf("steer group %v: %w", g.group, err)
			}
		}
	}
	for _, f := range u.flows {
		if e.flows[f]--; e.flows[f] <= 0 {
			delete(e.flows, f)
			if ifc := e.ifaces[f.ifindex]; ifc != nil && ifc.prog != nil {
				_ = ifc.prog.RemoveFlow(f.dst)
			}
		}
	}
	for _, g := range u.groups {
		if e.groups[g]--; e.groups[g] <= 0 {
			delete(e.groups, g)
			if ifc := e.ifaces[g.ifindex]; ifc != nil && ifc.prog != nil {
				_ = ifc.prog.RemoveGroup(g.group, g.port)
			}
		}
	}
	u.flows, u.groups = flows, groups
	if b == nil || len(flows)+len(groups) == 0 {
		delete(e.socks, u)
	} else {
		e.socks[u] = struct{}{}
	}
	u.bind.Store(b)
	t := &demuxTable{byPort: map[uint16][]member{}}
	for s := range e.socks {
		sb := s.bind.Load()
		t.byPort[sb.local.Port()] = append(t.byPort[sb.local.Port()], member{u: s, b: sb})
	}
	e.demux.Store(t)
	if why == nil && b != nil && len(flows)+len(groups) == 0 {
		why = fmt.Errorf("steer %v: no offloaded interface has that address: %w", b.local, ErrNotOffloaded)
	}
	return why
}

// needsLocked computes the flows and groups a binding needs: its address on the interface that
// has it, or every address of every offloaded interface for a wildcard bind; every joined group
// on every offloaded interface. The error is the first reason an interface it needed is not
// offloaded.
func (e *Env) needsLocked(b *binding) ([]flowKey, []groupKey, error) {
	addrs, err := e.addrsLocked()
	if err != nil {
		return nil, nil, err
	}
	var why error
	var flows []flowKey
	seen := map[int]bool{}
	var offloaded []int
	for _, a := range addrs {
		ifc := e.ifaceLocked(a.ifindex)
		if !seen[a.ifindex] {
			seen[a.ifindex] = true
			if ifc.err == nil {
				offloaded = append(offloaded, a.ifindex)
			}
		}
		if !b.takes(a.addr) {
			continue
		}
		if ifc.err != nil {
			if why == nil && (b.specific() || !a.addr.IsLoopback()) {
				why = ifc.err
			}
			continue
		}
		flows = append(flows, flowKey{ifindex: a.ifindex, dst: netip.AddrPortFrom(a.addr, b.local.Port())})
	}
	var groups []groupKey
	for _, j := range b.joins {
		if !j.group.Is4() {
			continue // IPv6 groups are the kernel's: their datagrams reach the kernel socket
		}
		for _, idx := range offloaded {
			k := groupKey{ifindex: idx, group: j.group, port: b.local.Port()}
			if !containsGroup(groups, k) {
				groups = append(groups, k)
			}
		}
	}
	if len(flows)+len(groups) > 0 {
		why = nil
	}
	return flows, groups, why
}

func containsGroup(gs []groupKey, k groupKey) bool {
	for _, g := range gs {
		if g == k {
			return true
		}
	}
	return false
}

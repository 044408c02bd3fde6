package packet

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NUDState is a kernel neighbour entry's state (NUD_* bits; the kernel sets exactly one).
type NUDState uint16

// Resolution is what a sender does with a neighbour answer.
type Resolution uint8

const (
	// Unresolved: no usable MAC (no entry, NUD_NONE, NUD_INCOMPLETE, NUD_FAILED, or an entry
	// without a 6-byte address). Send this datagram through the kernel, which resolves the address
	// (or call NeighNudge), and look again later.
	Unresolved Resolution = iota
	// Stale: the MAC is usable but unconfirmed (NUD_STALE, NUD_DELAY, NUD_PROBE). Use it, and call
	// NeighNudge (or send one datagram through the kernel) so the kernel revalidates it: traffic
	// that bypasses the kernel never confirms an entry, and a STALE entry is only probed when used.
	Stale
	// Usable: the MAC is confirmed or static (NUD_REACHABLE, NUD_PERMANENT, NUD_NOARP).
	Usable
)

// String names the resolution.
func (r Resolution) String() string {
	switch r {
	case Usable:
		return "usable"
	case Stale:
		return "stale"
	}
	return "unresolved"
}

// Resolution classifies the state (see the Resolution constants).
func (s NUDState) Resolution() Resolution {
	switch {
	case s&(unix.NUD_REACHABLE|unix.NUD_PERMANENT|unix.NUD_NOARP) != 0:
		return Usable
	case s&(unix.NUD_STALE|unix.NUD_DELAY|unix.NUD_PROBE) != 0:
		return Stale
	}
	return Unresolved
}

// String names the state bits like `ip neigh` does ("NONE" for 0).
func (s NUDState) String() string {
	names := []struct {
		bit  NUDState
		name string
	}{
		{unix.NUD_INCOMPLETE, "INCOMPLETE"}, {unix.NUD_REACHABLE, "REACHABLE"},
		{unix.NUD_STALE, "STALE"}, {unix.NUD_DELAY, "DELAY"}, {unix.NUD_PROBE, "PROBE"},
		{unix.NUD_FAILED, "FAILED"}, {unix.NUD_NOARP, "NOARP"}, {unix.NUD_PERMANENT, "PERMANENT"},
	}
	var parts []string
	for _, n := range names {
		if s&n.bit != 0 {
			parts = append(parts, n.name)
		}
	}
	if len(parts) == 0 {
		return "NONE"
	}
	return strings.Join(parts, "|")
}

// Neigh is one kernel neighbour entry (ARP for IPv4, neighbour discovery for IPv6).
type Neigh struct {
	// Ifindex and IP identify the entry.
	Ifindex int
	IP      netip.Addr
	// MAC is the link-layer address; HasMAC is false when the entry has none of 6 bytes (an
	// INCOMPLETE or FAILED entry).
	MAC    MAC
	HasMAC bool
	// State is the entry's NUD state.
	State NUDState
	// Flags are the NTF_* flags.
	Flags uint8
}

// Resolution classifies the entry: its state's resolution, Unresolved without a MAC.
func (n *Neigh) Resolution() Resolution {
	if !n.HasMAC {
		return Unresolved
	}
	return n.State.Resolution()
}

// NeighGet reads the kernel's neighbour entry for ip (IPv4 or IPv6; an IPv4-mapped address is
// IPv4) on interface ifindex (the interface's entries of ip's family are dumped, RTM_GETNEIGH,
// and the one for ip is kept). No entry gives an error wrapping ErrNoNeighbour (and
// unix.ENOENT).
func (c *Conn) NeighGet(ifindex int, ip netip.Addr) (Neigh, error) {
	ip = ip.Unmap().WithZone("")
	h, err := c.handle()
	if err != nil {
		return Neigh{}, fmt.Errorf("neighbour get %s dev %d: %w", ip, ifindex, err)
	}
	ns, err := h.NeighList(ifindex, family(ip))
	if err != nil {
		return Neigh{}, fmt.Errorf("neighbour get %s dev %d: %w", ip, ifindex, kernelErr(err))
	}
	for _, nn := range ns {
		if nn.LinkIndex != ifindex || ipOf(nn.IP, ip) != ip {
			continue
		}
		n := Neigh{Ifindex: ifindex, IP: ip, State: NUDState(nn.State), Flags: uint8(nn.Flags)}
		if len(nn.HardwareAddr) == len(n.MAC) {
			n.MAC, n.HasMAC = MAC(nn.HardwareAddr), true
		}
		return n, nil
	}
	return Neigh{}, fmt.Errorf("neighbour get %s dev %d: %w (%w)", ip, ifindex, ErrNoNeighbour, unix.ENOENT)
}

// family is ip's address family (AF_INET or AF_INET6).
func family(ip netip.Addr) int {
	if ip.Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// NeighNudge asks the kernel to resolve or revalidate the neighbour ip on interface ifindex, as if
// it had sent a packet to it (RTM_NEWNEIGH with NLM_F_CREATE and NTF_USE): a missing entry is
// created and resolved (ARP request, or neighbour solicitation for IPv6), a STALE entry moves to
// DELAY and is probed, a confirmed one is left alone. It returns at once; look the entry up again
// later. Needs CAP_NET_ADMIN in the namespace (else unix.EPERM: send one datagram through the
// kernel instead).
func (c *Conn) NeighNudge(ifindex int, ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	h, err := c.handle()
	if err == nil {
		err = h.NeighSet(&netlink.Neigh{LinkIndex: ifindex, Family: family(ip), Flags: unix.NTF_USE,
			IP: net.IP(ip.AsSlice())})
		if err != nil {
			err = kernelErr(err)
		}
	}
	if err != nil {
		return fmt.Errorf("neighbour nudge %s dev %d: %w", ip, ifindex, err)
	}
	return nil
}

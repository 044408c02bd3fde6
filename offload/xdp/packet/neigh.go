package packet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

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

// Neigh is one kernel neighbour (ARP) entry.
type Neigh struct {
	// Ifindex and IP identify the entry.
	Ifindex int
	IP      [4]byte
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

// NeighGet reads the kernel's neighbour entry for ip on interface ifindex (RTM_GETNEIGH, Linux
// 5.0 and later). No entry gives an error wrapping ErrNoNeighbour (and unix.ENOENT).
func (c *Conn) NeighGet(ifindex int, ip [4]byte) (Neigh, error) {
	c.newRequest(unix.RTM_GETNEIGH, 0, ndmsg(ifindex, 0))
	c.addAttr(unix.NDA_DST, ip[:])
	n := Neigh{Ifindex: ifindex, IP: ip}
	found := false
	err := c.exchange(unix.RTM_NEWNEIGH, func(b []byte) error {
		if len(b) < unix.SizeofNdMsg {
			return fmt.Errorf("short neighbour message: %w", ErrNetlink)
		}
		found = true
		n.State = NUDState(binary.NativeEndian.Uint16(b[8:10]))
		n.Flags = b[10]
		return forAttrs(b[unix.SizeofNdMsg:], func(typ uint16, val []byte) {
			if typ == unix.NDA_LLADDR && len(val) == len(n.MAC) {
				n.MAC, n.HasMAC = MAC(val), true
			}
		})
	})
	if errors.Is(err, unix.ENOENT) {
		return Neigh{}, fmt.Errorf("neighbour get %s dev %d: %w (%w)", ipString(ip), ifindex, ErrNoNeighbour, err)
	}
	if err == nil && !found {
		err = fmt.Errorf("no neighbour in the answer: %w", ErrNetlink)
	}
	if err != nil {
		return Neigh{}, fmt.Errorf("neighbour get %s dev %d: %w", ipString(ip), ifindex, err)
	}
	return n, nil
}

// NeighNudge asks the kernel to resolve or revalidate the neighbour ip on interface ifindex, as if
// it had sent a packet to it (RTM_NEWNEIGH with NLM_F_CREATE and NTF_USE): a missing entry is
// created and resolved (ARP request), a STALE entry moves to DELAY and is probed, a confirmed one is
// left alone. It returns at once; look the entry up again later. Needs CAP_NET_ADMIN in the
// namespace (else unix.EPERM: send one datagram through the kernel instead).
func (c *Conn) NeighNudge(ifindex int, ip [4]byte) error {
	c.newRequest(unix.RTM_NEWNEIGH, unix.NLM_F_CREATE, ndmsg(ifindex, unix.NTF_USE))
	c.addAttr(unix.NDA_DST, ip[:])
	if err := c.exchange(unix.RTM_NEWNEIGH, func([]byte) error { return nil }); err != nil {
		return fmt.Errorf("neighbour nudge %s dev %d: %w", ipString(ip), ifindex, err)
	}
	return nil
}

// ndmsg is the fixed header of a neighbour request: family AF_INET, padding, ifindex, state 0,
// flags, type 0.
func ndmsg(ifindex int, flags uint8) []byte {
	var b [unix.SizeofNdMsg]byte
	b[0] = unix.AF_INET
	binary.NativeEndian.PutUint32(b[4:8], uint32(int32(ifindex)))
	b[10] = flags
	return b[:]
}

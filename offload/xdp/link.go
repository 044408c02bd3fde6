package xdp

import (
	"fmt"

	"github.com/goxio/goxio/offload/xdp/packet"
)

// Link describes a network interface as XDP sees it.
type Link struct {
	Index    int
	Name     string
	RxQueues int // number of receive queues
	TxQueues int // number of transmit queues
	// XDPMode is how an XDP program is attached to the interface, ModeNone if none.
	XDPMode Mode
	// XDPProgID is the id of the attached program (of the native one in ModeMulti).
	XDPProgID uint32
}

// Values of IFLA_XDP_ATTACHED (linux/if_link.h).
const (
	xdpAttachedDrv   = 1
	xdpAttachedSKB   = 2
	xdpAttachedHW    = 3
	xdpAttachedMulti = 4
)

// LinkByIndex asks the kernel, through nl, about interface ifindex.
func LinkByIndex(nl *packet.Conn, ifindex int) (Link, error) {
	l, err := nl.LinkByIndex(ifindex)
	if err != nil {
		return Link{}, fmt.Errorf("xdp: %w", err)
	}
	return linkOf(l), nil
}

// LinkByName asks the kernel, through nl, about the interface called name.
func LinkByName(nl *packet.Conn, name string) (Link, error) {
	l, err := nl.LinkByName(name)
	if err != nil {
		return Link{}, fmt.Errorf("xdp: %w", err)
	}
	return linkOf(l), nil
}

func linkOf(l packet.Link) Link {
	out := Link{Index: l.Index, Name: l.Name, RxQueues: l.RxQueues, TxQueues: l.TxQueues, XDPProgID: l.XDPProgID}
	switch l.XDPAttached {
	case xdpAttachedDrv:
		out.XDPMode = ModeNative
	case xdpAttachedSKB:
		out.XDPMode = ModeGeneric
	case xdpAttachedHW:
		out.XDPMode = ModeOffload
	case xdpAttachedMulti:
		out.XDPMode = ModeMulti
	}
	return out
}

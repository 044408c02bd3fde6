package packet

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Link is what the kernel says about one network interface (RTM_GETLINK).
type Link struct {
	// Index is the interface index.
	Index int
	// Name is the interface name.
	Name string
	// MAC is the hardware address (zero when the link has none of 6 bytes, like loopback's).
	MAC MAC
	// MTU is the IPv4 MTU of the interface.
	MTU int
	// Flags are the IFF_* flags (unix.IFF_UP, unix.IFF_RUNNING, ...).
	Flags uint32
	// Encap is the hardware type as ip-link(8) names it ("ether" for Ethernet and veth,
	// "loopback", ...).
	Encap string
	// RxQueues and TxQueues are the numbers of receive and transmit queues.
	RxQueues, TxQueues int
	// XDPAttached is how an XDP program is attached (the kernel's XDP_ATTACHED_* value, 0 for
	// none) and XDPProgID the program's id (of the native one when several are attached).
	XDPAttached uint8
	XDPProgID   uint32
}

// Up reports whether the interface is administratively up and has its carrier (IFF_UP and
// IFF_RUNNING).
func (l *Link) Up() bool {
	return l.Flags&unix.IFF_UP != 0 && l.Flags&unix.IFF_RUNNING != 0
}

// Ethernet reports whether the interface carries Ethernet frames (ARPHRD_ETHER with a MAC), the
// only kind Build writes.
func (l *Link) Ethernet() bool { return l.Encap == "ether" && !l.MAC.IsZero() }

// LinkByIndex returns the interface with index ifindex. An unknown index gives an error wrapping
// unix.ENODEV.
func (c *Conn) LinkByIndex(ifindex int) (Link, error) {
	h, err := c.handle()
	if err != nil {
		return Link{}, fmt.Errorf("link get index %d: %w", ifindex, err)
	}
	if ifindex <= 0 {
		return Link{}, fmt.Errorf("link get index %d: %w", ifindex, unix.ENODEV)
	}
	l, err := h.LinkByIndex(ifindex)
	if err != nil {
		return Link{}, fmt.Errorf("link get index %d: %w", ifindex, kernelErr(err))
	}
	return linkOf(l), nil
}

// LinkByName returns the interface called name. An unknown name gives an error wrapping
// unix.ENODEV.
func (c *Conn) LinkByName(name string) (Link, error) {
	if name == "" || len(name) >= unix.IFNAMSIZ {
		return Link{}, fmt.Errorf("link get %q: invalid name: %w", name, unix.EINVAL)
	}
	h, err := c.handle()
	if err != nil {
		return Link{}, fmt.Errorf("link get %q: %w", name, err)
	}
	l, err := h.LinkByName(name)
	if err != nil {
		return Link{}, fmt.Errorf("link get %q: %w", name, kernelErr(err))
	}
	return linkOf(l), nil
}

// linkOf converts the netlink library's link.
func linkOf(nl netlink.Link) Link {
	a := nl.Attrs()
	l := Link{Index: a.Index, Name: a.Name, MTU: a.MTU, Flags: a.RawFlags, Encap: a.EncapType,
		RxQueues: a.NumRxQueues, TxQueues: a.NumTxQueues}
	if len(a.HardwareAddr) == len(l.MAC) {
		l.MAC = MAC(a.HardwareAddr)
	}
	if x := a.Xdp; x != nil && x.Attached {
		l.XDPAttached = uint8(x.AttachMode)
		l.XDPProgID = x.ProgId
	}
	return l
}

package packet

import (
	"encoding/binary"
	"fmt"

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
	// Type is the ARPHRD_* hardware type (unix.ARPHRD_ETHER for Ethernet and veth).
	Type uint16
}

// Up reports whether the interface is administratively up and has its carrier (IFF_UP and
// IFF_RUNNING).
func (l *Link) Up() bool {
	return l.Flags&unix.IFF_UP != 0 && l.Flags&unix.IFF_RUNNING != 0
}

// Ethernet reports whether the interface carries Ethernet frames (ARPHRD_ETHER with a MAC), the
// only kind Build writes.
func (l *Link) Ethernet() bool { return l.Type == unix.ARPHRD_ETHER && !l.MAC.IsZero() }

// LinkByIndex returns the interface with index ifindex. An unknown index gives an error wrapping
// unix.ENODEV.
func (c *Conn) LinkByIndex(ifindex int) (Link, error) {
	l, err := c.getLink(ifindex, "")
	if err != nil {
		return Link{}, fmt.Errorf("link get index %d: %w", ifindex, err)
	}
	return l, nil
}

// LinkByName returns the interface called name. An unknown name gives an error wrapping
// unix.ENODEV.
func (c *Conn) LinkByName(name string) (Link, error) {
	if name == "" || len(name) >= unix.IFNAMSIZ {
		return Link{}, fmt.Errorf("link get %q: invalid name: %w", name, unix.EINVAL)
	}
	l, err := c.getLink(0, name)
	if err != nil {
		return Link{}, fmt.Errorf("link get %q: %w", name, err)
	}
	return l, nil
}

func (c *Conn) getLink(ifindex int, name string) (Link, error) {
	var fam [unix.SizeofIfInfomsg]byte // family AF_UNSPEC, type, index, flags, change
	binary.NativeEndian.PutUint32(fam[4:8], uint32(int32(ifindex)))
	c.newRequest(unix.RTM_GETLINK, 0, fam[:])
	c.addAttrU32(unix.IFLA_EXT_MASK, rtextFilterSkipStats)
	if name != "" {
		c.addAttr(unix.IFLA_IFNAME, append([]byte(name), 0))
	}
	var l Link
	found := false
	err := c.exchange(unix.RTM_NEWLINK, func(b []byte) error {
		if len(b) < unix.SizeofIfInfomsg {
			return fmt.Errorf("short link message: %w", ErrNetlink)
		}
		found = true
		l.Type = binary.NativeEndian.Uint16(b[2:4])
		l.Index = int(int32(binary.NativeEndian.Uint32(b[4:8])))
		l.Flags = binary.NativeEndian.Uint32(b[8:12])
		var aerr error
		err := forAttrs(b[unix.SizeofIfInfomsg:], func(typ uint16, val []byte) {
			switch typ {
			case unix.IFLA_IFNAME:
				l.Name = cString(val)
			case unix.IFLA_ADDRESS:
				if len(val) == len(l.MAC) {
					l.MAC = MAC(val)
				}
			case unix.IFLA_MTU:
				v, err := attrU32(val)
				keep(&aerr, err)
				l.MTU = int(v)
			}
		})
		keep(&aerr, err)
		return aerr
	})
	if err != nil {
		return Link{}, err
	}
	if !found {
		return Link{}, fmt.Errorf("no link in the answer: %w", ErrNetlink)
	}
	return l, nil
}

package xdp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Link describes a network interface as the kernel reports it (RTM_GETLINK).
type Link struct {
	Index    int
	Name     string
	RxQueues int // number of receive queues (IFLA_NUM_RX_QUEUES)
	TxQueues int // number of transmit queues (IFLA_NUM_TX_QUEUES)
	// XDPMode is how an XDP program is attached to the interface, ModeNone if none.
	XDPMode Mode
	// XDPProgID is the id of the attached program (of the native one in ModeMulti).
	XDPProgID uint32
}

// LinkByIndex asks the kernel (netlink, in the calling thread's network namespace)
// about interface ifindex.
func LinkByIndex(ifindex int) (Link, error) {
	if ifindex <= 0 {
		return Link{}, fmt.Errorf("link %d: %w", ifindex, unix.ENODEV)
	}
	l, err := getLink(ifindex, "")
	if err != nil {
		return Link{}, fmt.Errorf("link %d: %w", ifindex, err)
	}
	return l, nil
}

// LinkByName asks the kernel (netlink, in the calling thread's network namespace)
// about the interface called name.
func LinkByName(name string) (Link, error) {
	if name == "" || len(name) >= unix.IFNAMSIZ {
		return Link{}, fmt.Errorf("link %q: %w", name, unix.ENODEV)
	}
	l, err := getLink(0, name)
	if err != nil {
		return Link{}, fmt.Errorf("link %q: %w", name, err)
	}
	return l, nil
}

// Values of IFLA_XDP_ATTACHED (linux/if_link.h) and the mask of an attribute's type
// without its NLA_F_NESTED and NLA_F_NET_BYTEORDER flags.
const (
	xdpAttachedDrv   = 1
	xdpAttachedSKB   = 2
	xdpAttachedHW    = 3
	xdpAttachedMulti = 4
	nlaTypeMask      = 0x3fff
)

// nlBufSize bounds one netlink answer; RTM_NEWLINK for one interface is a few KiB.
const nlBufSize = 64 << 10

// getLink sends one RTM_GETLINK request (by index, or by name when index is 0) and
// parses the answer. Everything read from the answer is bounds-checked.
func getLink(index int, name string) (Link, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return Link{}, fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	// The kernel answers a GETLINK at once; the timeout only bounds a kernel that would not.
	tv := unix.Timeval{Sec: 2}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return Link{}, fmt.Errorf("netlink SO_RCVTIMEO: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return Link{}, fmt.Errorf("netlink bind: %w", err)
	}
	const seq = 1
	req := make([]byte, unix.NLMSG_HDRLEN+unix.SizeofIfInfomsg, 64)
	ne := binary.NativeEndian
	ne.PutUint16(req[4:], unix.RTM_GETLINK)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], seq)
	ifi := req[unix.NLMSG_HDRLEN:]
	ifi[0] = unix.AF_UNSPEC
	ne.PutUint32(ifi[4:], uint32(int32(index)))
	if name != "" {
		req = appendAttr(req, unix.IFLA_IFNAME, append([]byte(name), 0))
	}
	ne.PutUint32(req[0:], uint32(len(req)))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return Link{}, fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, nlBufSize)
	for range 16 { // skip stray messages of other sequence numbers, boundedly
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return Link{}, fmt.Errorf("netlink receive: %w", err)
		}
		if n > len(buf) {
			return Link{}, fmt.Errorf("netlink receive: answer truncated: %w", unix.EMSGSIZE)
		}
		l, done, err := parseLinkAnswer(buf[:n], seq)
		if done {
			return l, err
		}
	}
	return Link{}, fmt.Errorf("netlink receive: no answer: %w", unix.EIO)
}

// appendAttr appends one route attribute (header, value, padding) to b.
func appendAttr(b []byte, typ uint16, val []byte) []byte {
	var h [4]byte
	binary.NativeEndian.PutUint16(h[0:], uint16(4+len(val)))
	binary.NativeEndian.PutUint16(h[2:], typ)
	b = append(b, h[:]...)
	b = append(b, val...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// parseLinkAnswer parses the netlink messages in b. done is false when none of them
// answers request seq.
func parseLinkAnswer(b []byte, seq uint32) (l Link, done bool, err error) {
	ne := binary.NativeEndian
	for len(b) >= unix.NLMSG_HDRLEN {
		mlen := int(ne.Uint32(b[0:]))
		if mlen < unix.NLMSG_HDRLEN || mlen > len(b) {
			return Link{}, true, fmt.Errorf("netlink: bad message length %d: %w", mlen, unix.EBADMSG)
		}
		typ, mseq := ne.Uint16(b[4:]), ne.Uint32(b[8:])
		msg := b[unix.NLMSG_HDRLEN:mlen]
		if adv := nlAlign(mlen); adv < len(b) {
			b = b[adv:]
		} else {
			b = nil
		}
		if mseq != seq {
			continue
		}
		switch typ {
		case unix.NLMSG_ERROR:
			if len(msg) < 4 {
				return Link{}, true, fmt.Errorf("netlink: short error message: %w", unix.EBADMSG)
			}
			if e := int32(ne.Uint32(msg)); e < 0 {
				return Link{}, true, unix.Errno(-e)
			}
			return Link{}, true, fmt.Errorf("netlink: acknowledgement instead of a link: %w", unix.EBADMSG)
		case unix.RTM_NEWLINK:
			l, err := parseLink(msg)
			return l, true, err
		}
	}
	return Link{}, false, nil
}

// parseLink parses an ifinfomsg and its attributes.
func parseLink(msg []byte) (Link, error) {
	ne := binary.NativeEndian
	if len(msg) < unix.SizeofIfInfomsg {
		return Link{}, fmt.Errorf("netlink: short link message: %w", unix.EBADMSG)
	}
	l := Link{Index: int(int32(ne.Uint32(msg[4:])))}
	for a := range attrs(msg[unix.SizeofIfInfomsg:]) {
		switch a.typ {
		case unix.IFLA_IFNAME:
			v := a.val
			for i, c := range v {
				if c == 0 {
					v = v[:i]
					break
				}
			}
			l.Name = string(v)
		case unix.IFLA_NUM_RX_QUEUES:
			if len(a.val) >= 4 {
				l.RxQueues = int(ne.Uint32(a.val))
			}
		case unix.IFLA_NUM_TX_QUEUES:
			if len(a.val) >= 4 {
				l.TxQueues = int(ne.Uint32(a.val))
			}
		case unix.IFLA_XDP:
			l.XDPMode, l.XDPProgID = parseXDPAttr(a.val)
		}
	}
	return l, nil
}

// parseXDPAttr parses the nested IFLA_XDP attribute.
func parseXDPAttr(b []byte) (Mode, uint32) {
	ne := binary.NativeEndian
	var mode Mode
	var id, drv, skb, hw uint32
	for a := range attrs(b) {
		u32 := uint32(0)
		if len(a.val) >= 4 {
			u32 = ne.Uint32(a.val)
		}
		switch a.typ {
		case unix.IFLA_XDP_ATTACHED:
			if len(a.val) >= 1 {
				switch a.val[0] {
				case xdpAttachedDrv:
					mode = ModeNative
				case xdpAttachedSKB:
					mode = ModeGeneric
				case xdpAttachedHW:
					mode = ModeOffload
				case xdpAttachedMulti:
					mode = ModeMulti
				}
			}
		case unix.IFLA_XDP_PROG_ID:
			id = u32
		case unix.IFLA_XDP_DRV_PROG_ID:
			drv = u32
		case unix.IFLA_XDP_SKB_PROG_ID:
			skb = u32
		case unix.IFLA_XDP_HW_PROG_ID:
			hw = u32
		}
	}
	if id == 0 {
		for _, v := range []uint32{drv, skb, hw} {
			if v != 0 {
				id = v
				break
			}
		}
	}
	return mode, id
}

// attr is one route attribute; val aliases the message.
type attr struct {
	typ uint16
	val []byte
}

// attrs iterates over the route attributes in b, stopping at the first malformed one.
func attrs(b []byte) func(func(attr) bool) {
	return func(yield func(attr) bool) {
		ne := binary.NativeEndian
		for len(b) >= 4 {
			alen := int(ne.Uint16(b[0:]))
			if alen < 4 || alen > len(b) {
				return
			}
			if !yield(attr{typ: ne.Uint16(b[2:]) & nlaTypeMask, val: b[4:alen]}) {
				return
			}
			if adv := nlAlign(alen); adv < len(b) {
				b = b[adv:]
			} else {
				return
			}
		}
	}
}

// nlAlign rounds n up to the netlink alignment (4).
func nlAlign(n int) int { return (n + 3) &^ 3 }

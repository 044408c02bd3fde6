package packet

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Netlink plumbing: one NETLINK_ROUTE socket, requests built by hand (host byte order, 4-byte
// aligned attributes), answers matched by sequence number and port id. Every request carries
// NLM_F_ACK, so an exchange ends with the kernel's ack or error; no dumps are used.

const (
	// recvTimeout bounds every wait for the kernel's answer (SO_RCVTIMEO, a kernel timer: no Go
	// timer, no netpoller).
	recvTimeout = 2 // seconds
	// recvBufSize holds any answer to the requests of this package (a link answer without
	// statistics is a few KiB).
	recvBufSize = 64 << 10

	nlaTypeMask          = 0x3fff // drops NLA_F_NESTED and NLA_F_NET_BYTEORDER
	nlmFCapped           = 0x100  // NLM_F_CAPPED: the error quotes only the request's header
	nlmFAckTLVs          = 0x200  // NLM_F_ACK_TLVS: extended ack attributes follow
	rtextFilterSkipStats = 1 << 3 // RTEXT_FILTER_SKIP_STATS for IFLA_EXT_MASK
)

// Conn is a NETLINK_ROUTE socket bound to the network namespace of the thread that opened it.
// It is not safe for concurrent use.
type Conn struct {
	fd   int
	pid  uint32 // port id the kernel gave the socket
	seq  uint32
	rbuf []byte
	wbuf []byte
}

// Open creates a Conn: a blocking netlink socket with close-on-exec and a receive timeout.
func Open() (*Conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink open: socket: %w", err)
	}
	c := &Conn{fd: fd, rbuf: make([]byte, recvBufSize), wbuf: make([]byte, 0, 256)}
	if err := c.setup(); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink open: %w", err)
	}
	return c, nil
}

func (c *Conn) setup() error {
	if err := unix.Bind(c.fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	sa, err := unix.Getsockname(c.fd)
	if err != nil {
		return fmt.Errorf("getsockname: %w", err)
	}
	nl, ok := sa.(*unix.SockaddrNetlink)
	if !ok {
		return fmt.Errorf("getsockname: %T: %w", sa, ErrNetlink)
	}
	c.pid = nl.Pid
	tv := unix.Timeval{Sec: recvTimeout}
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_RCVTIMEO: %w", err)
	}
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_SNDTIMEO: %w", err)
	}
	// Extended acks only improve error messages; kernels without them still work.
	_ = unix.SetsockoptInt(c.fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	return nil
}

// Adopt hands the socket's descriptor to place, which returns the descriptor to use from now on:
// the same one, or a duplicate it made (closing the old one), for example out of the numbers the
// program the library is preloaded into expects to get. Call it right after Open.
func (c *Conn) Adopt(place func(fd int) int) {
	if c.fd >= 0 {
		c.fd = place(c.fd)
	}
}

// FD returns the socket's descriptor (-1 once closed).
func (c *Conn) FD() int { return c.fd }

// Close closes the socket. The Conn must not be used afterwards.
func (c *Conn) Close() error {
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	if err != nil {
		return fmt.Errorf("netlink close: %w", err)
	}
	return nil
}

// newRequest starts a request of type typ in c.wbuf: the netlink header (length filled in by
// exchange) followed by the fixed-size family header fam.
func (c *Conn) newRequest(typ, flags uint16, fam []byte) {
	c.seq++
	b := c.wbuf[:0]
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = binary.NativeEndian.AppendUint16(b, flags|unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	b = binary.NativeEndian.AppendUint32(b, c.seq)
	b = binary.NativeEndian.AppendUint32(b, c.pid)
	c.wbuf = append(b, fam...)
}

// addAttr appends one attribute (rtattr header, value, padding to 4 bytes) to the request.
func (c *Conn) addAttr(typ uint16, val []byte) {
	b := binary.NativeEndian.AppendUint16(c.wbuf, uint16(4+len(val)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, val...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	c.wbuf = b
}

// addAttrU32 appends a 32-bit attribute in host byte order.
func (c *Conn) addAttrU32(typ uint16, v uint32) {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	c.addAttr(typ, b[:])
}

// exchange sends the request in c.wbuf and reads answers until the kernel's ack. Each answer of
// type want is passed to fn (without its netlink header; the slice is only valid during the call).
// A kernel error comes back as its errno, with the extended-ack message when there is one.
func (c *Conn) exchange(want uint16, fn func(body []byte) error) error {
	if c.fd < 0 {
		return unix.EBADF
	}
	binary.NativeEndian.PutUint32(c.wbuf[0:4], uint32(len(c.wbuf)))
	for {
		err := unix.Sendto(c.fd, c.wbuf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("send: %w", err)
		}
		break
	}
	var ferr error
	for {
		n, from, err := unix.Recvfrom(c.fd, c.rbuf, unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if err == unix.EAGAIN {
				return fmt.Errorf("receive: no answer within %ds: %w", recvTimeout, err)
			}
			return fmt.Errorf("receive: %w", err)
		}
		if n > len(c.rbuf) {
			return fmt.Errorf("receive: %d-byte answer truncated: %w", n, ErrNetlink)
		}
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			continue // not from the kernel
		}
		done, err := c.walk(c.rbuf[:n], want, fn, &ferr)
		if err != nil {
			return err
		}
		if done {
			return ferr
		}
	}
}

// walk handles the messages of one datagram; done is set by the ack. The first error fn returns
// is kept in *ferr and reported after the ack (so the socket stays in step).
func (c *Conn) walk(b []byte, want uint16, fn func([]byte) error, ferr *error) (done bool, err error) {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return false, fmt.Errorf("message length %d of %d: %w", l, len(b), ErrNetlink)
		}
		typ := binary.NativeEndian.Uint16(b[4:6])
		flags := binary.NativeEndian.Uint16(b[6:8])
		seq := binary.NativeEndian.Uint32(b[8:12])
		pid := binary.NativeEndian.Uint32(b[12:16])
		body := b[unix.NLMSG_HDRLEN:l]
		next := (l + 3) &^ 3
		if next > len(b) {
			next = len(b)
		}
		b = b[next:]
		if seq != c.seq || pid != c.pid {
			continue // an answer to an earlier request that timed out
		}
		switch typ {
		case unix.NLMSG_ERROR:
			if len(body) < 4 {
				return false, fmt.Errorf("short error message: %w", ErrNetlink)
			}
			errno := -int32(binary.NativeEndian.Uint32(body[0:4]))
			if errno == 0 {
				return true, nil
			}
			if msg := extAckMessage(body, flags); msg != "" {
				return false, fmt.Errorf("%s: %w", msg, unix.Errno(errno))
			}
			return false, unix.Errno(errno)
		case unix.NLMSG_DONE:
			return true, nil
		case unix.NLMSG_NOOP:
		case want:
			if *ferr == nil {
				*ferr = fn(body)
			}
		default:
			if *ferr == nil {
				*ferr = fmt.Errorf("answer of type %d, want %d: %w", typ, want, ErrNetlink)
			}
		}
	}
	return false, nil
}

// extAckMessage returns the NLMSGERR_ATTR_MSG text of an error message body (errno, quoted
// request, attributes), or "".
func extAckMessage(body []byte, flags uint16) string {
	if flags&nlmFAckTLVs == 0 || len(body) < 4+unix.NLMSG_HDRLEN {
		return ""
	}
	quoted := unix.NLMSG_HDRLEN
	if flags&nlmFCapped == 0 {
		quoted = int(binary.NativeEndian.Uint32(body[4:8]))
	}
	off := 4 + (quoted+3)&^3
	if quoted < unix.NLMSG_HDRLEN || off > len(body) {
		return ""
	}
	msg := ""
	_ = forAttrs(body[off:], func(typ uint16, val []byte) {
		if typ == unix.NLMSGERR_ATTR_MSG {
			msg = cString(val)
		}
	})
	return msg
}

// forAttrs calls fn for each attribute in b (type without the nested/byte-order bits).
func forAttrs(b []byte, fn func(typ uint16, val []byte)) error {
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < 4 || l > len(b) {
			return fmt.Errorf("attribute length %d of %d: %w", l, len(b), ErrNetlink)
		}
		fn(binary.NativeEndian.Uint16(b[2:4])&nlaTypeMask, b[4:l])
		next := (l + 3) &^ 3
		if next > len(b) {
			next = len(b)
		}
		b = b[next:]
	}
	return nil
}

// cString returns b up to its first NUL.
func cString(b []byte) string {
	for i, x := range b {
		if x == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// attrU32 reads a 32-bit host-order attribute value.
func attrU32(val []byte) (uint32, error) {
	if len(val) < 4 {
		return 0, fmt.Errorf("%d-byte u32 attribute: %w", len(val), ErrNetlink)
	}
	return binary.NativeEndian.Uint32(val), nil
}

// attrIPv4 reads a 4-byte address attribute.
func attrIPv4(val []byte) ([4]byte, error) {
	if len(val) != 4 {
		return [4]byte{}, fmt.Errorf("%d-byte IPv4 attribute: %w", len(val), ErrNetlink)
	}
	return [4]byte(val), nil
}

// keep stores err in *first unless an earlier error is there.
func keep(first *error, err error) {
	if *first == nil {
		*first = err
	}
}

// ipString formats an IPv4 address for error messages.
func ipString(a [4]byte) string { return netip.AddrFrom4(a).String() }

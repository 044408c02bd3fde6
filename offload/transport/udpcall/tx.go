package udpcall

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
)

// Tx is one send call of a UDP socket (write, writev, sendto, sendmsg), parsed: the program's
// buffers (aliasing its memory), their total length, the flags, sendmsg's control data, and the
// address the call names, if any.
type Tx struct {
	Bufs    [][]byte
	Total   int
	Flags   int
	name    uintptr
	nameLen uint32
	ctl     uintptr // sendmsg's msg_control, ctlLen bytes
	ctlLen  uint64
}

// Ctl reports whether the call carries control data (sendmsg with a msg_controllen).
func (t *Tx) Ctl() bool { return t.ctlLen != 0 }

// ParseTx reads a send call's arguments from the program's memory (under the caller's fault
// protection) into bufs, the caller's storage; false when only the kernel can serve the call (a
// negative or too large iovec count, or another operation: sendmmsg is the caller's).
func ParseTx(c *transport.Call, bufs [][]byte) (Tx, bool) {
	var t Tx
	switch c.Op {
	case transport.OpWrite:
		t.Bufs, t.Total = append(bufs, umem.Bytes(c.A[0], int(c.A[1]))), int(c.A[1])
	case transport.OpWritev:
		if int(c.A[1]) < 0 || int(c.A[1]) > umem.MaxIov {
			return t, false
		}
		t.Bufs, t.Total = umem.Iovecs(bufs, c.A[0], int(c.A[1]))
	case transport.OpSendto:
		t.Bufs = append(bufs, umem.Bytes(c.A[0], int(c.A[1])))
		t.Total, t.Flags = int(c.A[1]), int(c.A[2])
		t.name, t.nameLen = c.A[3], uint32(c.A[4])
	case transport.OpSendmsg:
		m := umem.Msghdr(c.A[0])
		iov, iovlen := umem.MsgIov(m)
		if iovlen < 0 || iovlen > umem.MaxIov {
			return t, false
		}
		t.ctl, t.ctlLen = umem.MsgControl(m)
		t.Bufs, t.Total = umem.Iovecs(bufs, iov, iovlen)
		t.Flags = int(c.A[1])
		t.name, t.nameLen = umem.MsgName(m)
	default:
		return t, false
	}
	return t, true
}

// Dest is the datagram's destination: the IPv4 or IPv6 address the call names (an IPv4-mapped
// one stays mapped: the sending socket's family decides what it means), or peer() (the connected
// peer) when it names none. false when the kernel must answer: a bad address length (EINVAL),
// another family, no destination (ENOTCONN, EDESTADDRREQ).
func (t *Tx) Dest(peer func() netip.AddrPort) (netip.AddrPort, bool) {
	if t.name == 0 {
		dst := peer()
		return dst, dst.IsValid()
	}
	if t.nameLen > unix.SizeofSockaddrAny || int32(t.nameLen) < 0 {
		return netip.AddrPort{}, false
	}
	dst := sysc.ParseSockaddr(umem.Bytes(t.name, int(t.nameLen)))
	return dst, dst.IsValid()
}

// Named reports whether the call names a destination (sendto, sendmsg with msg_name).
func (t *Tx) Named() bool { return t.name != 0 }

// ScopeID is the sin6_scope_id of the destination the call names: 0 when it names none, names a
// sockaddr_in, or a sockaddr_in6 too short to hold one (the kernel's checks are its own).
func (t *Tx) ScopeID() uint32 {
	if t.name == 0 || t.nameLen < unix.SizeofSockaddrInet6 {
		return 0
	}
	b := umem.Bytes(t.name, unix.SizeofSockaddrInet6)
	if binary.NativeEndian.Uint16(b) != unix.AF_INET6 {
		return 0
	}
	return binary.NativeEndian.Uint32(b[24:28])
}

// Sockaddr4 parses a sockaddr_in; the zero value for anything else.
func Sockaddr4(b []byte) netip.AddrPort {
	if len(b) < unix.SizeofSockaddrInet4 || binary.NativeEndian.Uint16(b) != unix.AF_INET {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4]))
}

// Family is a UDP socket's family: given, the engine's word for it (from socket()), when set, else
// the kernel's (SO_DOMAIN of fd; 0 when it cannot be read).
func Family(given, fd int) int {
	if given != 0 {
		return given
	}
	d, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	return d
}

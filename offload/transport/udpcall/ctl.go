package udpcall

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/umem"
)

// maxDroppableCtl bounds the control data CtlDroppable reads: more is the kernel's to judge.
const maxDroppableCtl = 256

// CtlDroppable reports whether every control message of the sendmsg call only sets what a
// same-host ring may leave out: IP_TTL, IP_TOS, IPV6_HOPLIMIT or IPV6_TCLASS, each with a value
// the kernel accepts. They change nothing a receiver served by a ring sees: one that asks for
// them (IP_RECVTTL, IP_RECVTOS, IPV6_RECVHOPLIMIT, IPV6_RECVTCLASS) is served by the kernel
// (offload/udp.go, kernelOnlyOptions). A program that marks some of its datagrams (DSCP, ECN)
// keeps them on the ring with the others, and in order with them. Any other message, a length or
// value the kernel refuses (EINVAL), or control data over maxDroppableCtl bytes: false, and the
// kernel answers. Reads the program's memory under the caller's fault protection.
func (t *Tx) CtlDroppable() bool {
	if t.ctl == 0 || t.ctlLen > maxDroppableCtl {
		return false
	}
	// x/sys's parser walks as the kernel does (a message starts where a header's worth of bytes
	// is left; its length must fit; the next starts at it rounded up to 8) and reads a header only
	// where one fits, which the loop's test ensures.
	for b := umem.Bytes(t.ctl, int(t.ctlLen)); len(b) >= unix.SizeofCmsghdr; {
		h, data, rest, err := unix.ParseOneSocketControlMessage(b)
		if err != nil || !droppableCmsg(h.Level, h.Type, data) {
			return false
		}
		b = rest
	}
	return true
}

// droppableCmsg reports whether one control message is one CtlDroppable lets a ring leave out,
// with the length and value the kernel checks (net/ipv4/ip_sockglue.c ip_cmsg_send,
// net/ipv6/datagram.c ip6_datagram_send_ctl).
func droppableCmsg(level, typ int32, data []byte) bool {
	val := func() int32 { return int32(binary.NativeEndian.Uint32(data)) }
	switch {
	case level == unix.IPPROTO_IP && typ == unix.IP_TTL:
		return len(data) == 4 && val() >= 1 && val() <= 255
	case level == unix.IPPROTO_IP && typ == unix.IP_TOS:
		return len(data) == 1 || len(data) == 4 && val() >= 0 && val() <= 255
	case level == unix.IPPROTO_IPV6 && (typ == unix.IPV6_HOPLIMIT || typ == unix.IPV6_TCLASS):
		return len(data) == 4 && val() >= -1 && val() <= 255
	}
	return false
}

package udpcall

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
)

// KernelRecvFlags are the receive flags only the kernel serves (the error queue; MSG_OOB, which
// UDP refuses). The user-space paths honour MSG_PEEK, MSG_TRUNC and MSG_DONTWAIT and, like the
// kernel's UDP, ignore the others (MSG_WAITALL, MSG_NOSIGNAL, MSG_CMSG_CLOEXEC, ...).
const KernelRecvFlags = unix.MSG_ERRQUEUE | unix.MSG_OOB

// MaxBufs is how many buffers a call gathers without allocating.
const MaxBufs = 8

// Rx is one receive call, parsed: where the datagram goes.
type Rx struct {
	Bufs    [][]byte
	Flags   int
	NamePtr uintptr      // the program's sockaddr buffer, or 0
	NameLen *uint32      // its length word (in and out), or nil
	Msg     *unix.Msghdr // recvmsg: gets msg_flags and msg_controllen
	Bad     bool         // a NULL buffer: the datagram is consumed and the call fails with EFAULT
}

// ParseRx reads a receive call's arguments (read, readv, recvfrom, recvmsg); false when a
// user-space path cannot serve it. bufs is the caller's storage for the buffers. A NULL buffer
// makes the call bad (it still waits for, and consumes, a datagram). The call is returned by
// value and nothing stores into a pointer, so the caller's storage stays on its stack (no
// allocation per call). Reading the program's memory may fault: the caller protects it (umem).
func ParseRx(c *transport.Call, bufs [][]byte) (Rx, bool) {
	var rc Rx
	switch c.Op {
	case transport.OpRead:
		bufs, rc.Bad = addBuf(bufs, c.A[0], int(c.A[1]))
	case transport.OpReadv:
		if int(c.A[1]) < 0 || int(c.A[1]) > umem.MaxIov {
			return rc, false
		}
		bufs, rc.Bad = umem.IovecsOrNil(bufs, c.A[0], int(c.A[1]))
	case transport.OpRecvfrom:
		rc.Flags = int(c.A[2])
		if c.A[3] != 0 && c.A[4] != 0 {
			rc.NamePtr, rc.NameLen = c.A[3], umem.Uint32(c.A[4])
		}
		bufs, rc.Bad = addBuf(bufs, c.A[0], int(c.A[1]))
	case transport.OpRecvmsg:
		return ParseMsg(c.A[0], int(c.A[1]), bufs)
	default:
		return rc, false
	}
	rc.Bufs = bufs
	return rc, true
}

// addBuf adds one buffer; a NULL one with a length reports bad instead.
func addBuf(bufs [][]byte, p uintptr, n int) ([][]byte, bool) {
	if p == 0 && n > 0 {
		return bufs, true
	}
	return append(bufs, umem.Bytes(p, n)), false
}

// ParseMsg reads a recvmsg call from the program's msghdr at mp (also one message of a
// recvmmsg); false when a user-space path cannot serve it.
func ParseMsg(mp uintptr, flags int, bufs [][]byte) (Rx, bool) {
	var rc Rx
	m := umem.Msghdr(mp)
	iov, iovlen := umem.MsgIov(m)
	if iovlen < 0 || iovlen > umem.MaxIov {
		return rc, false
	}
	rc.Bufs, rc.Bad = umem.IovecsOrNil(bufs, iov, iovlen)
	rc.Flags = flags
	rc.Msg = m
	if np, _ := umem.MsgName(m); np != 0 {
		rc.NamePtr, rc.NameLen = np, &m.Namelen
	}
	return rc, true
}

// Deliver writes a datagram (its source sockaddr name and payload data) into the call as the
// kernel's receive does: the payload into the buffers, the name and its full length, msg_flags
// MSG_TRUNC when the buffers were short and no control messages. It returns the call's result:
// the bytes copied, or with the MSG_TRUNC flag the payload's length.
func (rc *Rx) Deliver(name, data []byte) int {
	copied := umem.Scatter(rc.Bufs, data)
	rc.DeliverName(name)
	if rc.Msg != nil {
		rc.Msg.Flags = 0
		if copied < len(data) {
			rc.Msg.Flags = unix.MSG_TRUNC
		}
		rc.Msg.SetControllen(0)
	}
	if rc.Flags&unix.MSG_TRUNC != 0 {
		return len(data)
	}
	return copied
}

// DeliverName writes a datagram's source address as recvfrom writes it (truncated to the
// program's buffer, the length word set to its full length): the part of Deliver a receive that
// hands the payload over in place does.
func (rc *Rx) DeliverName(name []byte) {
	if rc.NameLen != nil {
		l := min(int(*rc.NameLen), len(name))
		copy(umem.Bytes(rc.NamePtr, l), name)
		*rc.NameLen = uint32(len(name))
	}
}

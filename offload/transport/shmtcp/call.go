package shmtcp

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
)

// maxBufs is how many program buffers a call gathers without allocating.
const maxBufs = 8

// dataCall is one data call, parsed: the program's buffers, flags, and for receives where
// msg_flags, msg_controllen and the name length go.
type dataCall struct {
	bufs     [][]byte
	total    int
	flags    int
	namelenp *uint32      // recvfrom's *addrlen: TCP reports no source (0)
	msg      *unix.Msghdr // recvmsg: msg_namelen, msg_flags and msg_controllen become 0
	ctl      bool         // sendmsg with control data
	// discard: a receive with MSG_TRUNC, which on TCP drops total bytes without touching the
	// program's buffers (bufs is nil: they may be NULL).
	discard bool
}

// parseCall reads a data call's arguments from the program's memory (umem, under the caller's
// fault protection); false when the transport leaves the call to the kernel (more iovecs than
// UIO_MAXIOV, recvmmsg, sendmmsg, sendfile: see Transfer). bufs is the caller's storage.
func parseCall(c *transport.Call, bufs [][]byte) (dataCall, bool) {
	var d dataCall
	switch c.Op {
	case transport.OpRead, transport.OpWrite:
		d.bufs = append(bufs, umem.Bytes(c.A[0], int(c.A[1])))
		d.total = int(c.A[1])
	case transport.OpReadv, transport.OpWritev:
		if int(c.A[1]) < 0 || int(c.A[1]) > umem.MaxIov {
			return d, false
		}
		d.bufs, d.total = umem.Iovecs(bufs, c.A[0], int(c.A[1]))
	case transport.OpRecvfrom, transport.OpSendto:
		d.total, d.flags = int(c.A[1]), int(c.A[2])
		if c.Op == transport.OpRecvfrom && d.flags&unix.MSG_TRUNC != 0 {
			d.discard = true
		} else {
			d.bufs = append(bufs, umem.Bytes(c.A[0], int(c.A[1])))
		}
		if c.Op == transport.OpRecvfrom && c.A[3] != 0 && c.A[4] != 0 {
			d.namelenp = umem.Uint32(c.A[4])
		}
	case transport.OpRecvmsg, transport.OpSendmsg:
		m := umem.Msghdr(c.A[0])
		iov, n := umem.MsgIov(m)
		if n < 0 || n > umem.MaxIov {
			return d, false
		}
		d.flags = int(c.A[1])
		if c.Op == transport.OpRecvmsg && d.flags&unix.MSG_TRUNC != 0 {
			d.total, d.discard = umem.IovLen(iov, n), true
		} else {
			d.bufs, d.total = umem.Iovecs(bufs, iov, n)
		}
		if c.Op == transport.OpRecvmsg {
			d.msg = m
		} else {
			d.ctl = m.Controllen != 0
		}
	default:
		return d, false
	}
	if d.total < 0 {
		return d, false
	}
	return d, true
}

// advance drops the first n bytes of bufs (what a call already moved).
func advance(bufs [][]byte, n int) [][]byte {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if n > 0 && len(bufs) > 0 {
		bufs[0] = bufs[0][n:] // bufs is the call's own list (parseCall's storage)
	}
	return bufs
}

// finishRecv writes what TCP reports besides the data: no source address, no control data, no
// message flags.
func (d *dataCall) finishRecv() {
	if d.namelenp != nil {
		*d.namelenp = 0
	}
	if d.msg != nil {
		d.msg.Namelen = 0
		d.msg.SetControllen(0)
		d.msg.Flags = 0
	}
}

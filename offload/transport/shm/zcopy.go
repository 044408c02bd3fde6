package shm

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/udpcall"
)

// Zero-copy receive (VMA's recvfrom_zcopy): a datagram from a ring is handed to the program where
// it lies, held in the ring (offload/shm hold.go) until the program frees it; its sender meanwhile
// finds the ring that much fuller. Datagrams from the kernel socket are copied as by recvfrom.

var _ transport.Holder = (*UDP)(nil)

// ReceiveHeld performs c (a recvfrom) holding a ring's datagram in place: h gets the payload's
// address and token, the source address is written as recvfrom writes it, and the result is the
// datagram's length. A kernel datagram (or a peek) is copied into c's buffer, h left zero.
func (u *UDP) ReceiveHeld(c transport.Call, h *transport.Held) (int, syscall.Errno, bool) {
	if c.Op != transport.OpRecvfrom {
		return u.TransferVia(c)
	}
	if !u.enter() {
		return -1, unix.EBADF, false
	}
	defer u.exit()
	fd := c.FD
	n, errno, viaOS := u.recv(&c, h)
	if viaOS && errno == 0 && capture.On() {
		c.FD = fd
		u.tapOS(&c, n)
	}
	if errno == 0 && h.Addr != 0 && h.Box != 0 {
		u.prefetch(fd, h)
	}
	return n, errno, viaOS
}

// Prefetch queues in h.Box the datagrams waiting in the rings now, after a plain receive on fd
// (prefetch).
func (u *UDP) Prefetch(fd int, h *transport.Held) bool {
	if h.Box == 0 || !u.enter() {
		return true
	}
	defer u.exit()
	// Most receives of a request-response exchange find nothing after their datagram: a look at
	// the record words (loads only) spares them the receive lock and the rings' walk.
	if in := u.inbox.Load(); in != nil {
		if in.Pending() {
			u.prefetch(fd, h)
		} else {
			u.kernelReadOn(fd, h, in)
		}
	}
	return true
}

// prefetch attaches the call's box to the inbox and queues there the datagrams waiting in the
// rings now (offload/shm hold_box.go): the program's next receives take them without entering the
// engine. Not while kernel datagrams may be older than the rings' (their order is decided per
// receive), while multicast loopback copies are to be told from ring datagrams, while a capture
// runs, or once the socket is going back to the kernel.
func (u *UDP) prefetch(fd int, h *transport.Held) {
	in := u.inbox.Load()
	if in == nil || u.kernelOnly.Load() || u.spill.Left() || u.kernelFirst.Load() || u.joinSnap.Load() != nil || capture.On() {
		return
	}
	u.rxmu.Lock()
	defer u.rxmu.Unlock()
	if h.Epoch = in.UseBox(h.Box, fd); h.Epoch == 0 {
		return
	}
	bytes := 0
	in.QueueBegin()
	for h.Queued < transport.MaxQueued {
		name, data, err := in.PeekRings()
		if err != nil || len(name) != unix.SizeofSockaddrInet4 && len(name) != unix.SizeofSockaddrInet6 || len(data) == 0 ||
			in.PeekedAfterKernel() {
			// a group's datagram is for fromRing to admit, an empty one for recvfrom, one
			// that follows its sender's kernel datagrams for the receive that orders them
			break
		}
		if !in.Queue(name, data) {
			break
		}
		h.QueuedLen[h.Queued] = uint32(len(data))
		h.Queued++
		bytes += len(data)
	}
	u.countRingRxN(in, h.Queued, bytes)
	h.Now = in.QueueEnd()
}

// Unbox detaches fd's box from the inbox (fd no longer names the socket).
func (u *UDP) Unbox(fd int) {
	if !u.enter() {
		return
	}
	defer u.exit()
	if in := u.inbox.Load(); in != nil {
		u.rxmu.Lock()
		in.Unbox(fd)
		u.rxmu.Unlock()
	}
}

// holdRing hands the datagram the last Peek returned over in place; the caller holds rxmu.
func (u *UDP) holdRing(in *ring.Inbox, rc *udpcall.Rx, h *transport.Held, name, full, data []byte) int {
	if capture.On() {
		u.tapRx(full, data, in.PeekSender())
	}
	u.countTaken(in, len(data))
	if len(data) == 0 {
		in.Pop() // nothing to hand over: an empty datagram is received as recvfrom does
	} else if tok, err := in.Hold(); err == nil { // Hold cannot fail after a successful Peek
		h.Addr, h.Token, h.Now = ring.Addr(data), tok, in.HeldNow()
	}
	rc.DeliverName(name)
	return len(data)
}

// Release frees records ReceiveHeld handed over, under one hold of the receive lock; tokens that
// name none held now are skipped. It returns how many it freed and how many are held now.
func (u *UDP) Release(tokens []uint64) (freed, held int) {
	if !u.enter() {
		return 0, 0
	}
	defer u.exit()
	in := u.inbox.Load()
	if in == nil {
		return 0, 0
	}
	u.rxmu.Lock()
	defer u.rxmu.Unlock()
	in.Fold()
	for _, t := range tokens {
		if in.Release(t) == nil {
			freed++
		}
	}
	return freed, in.HeldNow()
}

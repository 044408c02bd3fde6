package offload

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// Zero-copy receive, VMA's recvfrom_zcopy and free_packets (shim/preload/vma_records.c): on a
// transport that can hold its datagrams in place (transport.Holder: the shared-memory and the
// AF_XDP UDP ones), the program gets the payload where it lies and frees it later; anywhere else
// the preload library copies into a record of its own, as it learns from EOPNOTSUPP.

// heldPool keeps the results of zero-copy receives: a Held handed to the transport through its
// interface would escape, an allocation per receive (the garbage collector's runs are latency
// spikes for the ping-pong programs that use the API).
var heldPool = sync.Pool{New: func() any { return new(transport.Held) }}

// zcopyRecv serves OpZcopyRecv: a recvfrom that hands a held datagram over in place.
func (e *Engine) zcopyRecv(s *Socket, c *transport.Call) int64 {
	z := zcopyAt(c.A[0])
	h, ok := s.transport().(transport.Holder)
	if !ok || s.typ != sockDgram {
		return -int64(unix.EOPNOTSUPP)
	}
	rc := transport.Call{Op: transport.OpRecvfrom, FD: c.FD,
		A: [5]uintptr{z.buf, z.len, uintptr(uint32(z.flags)), z.from, z.fromlen}}
	if e.udpRings() {
		if errno := e.udpWaitInbox(s, &rc); errno != 0 {
			e.count(s, &rc, -1, errno, true)
			return result(-1, errno)
		}
		// The socket may have got its transport while it waited.
		if h, ok = s.transport().(transport.Holder); !ok {
			return -int64(unix.EOPNOTSUPP)
		}
	}
	held := heldPool.Get().(*transport.Held)
	defer heldPool.Put(held)
	*held = transport.Held{Box: z.box}
	n, errno, os := h.ReceiveHeld(rc, held)
	e.count(s, &rc, n, errno, os)
	z.data, z.token, z.epoch, z.queued = 0, 0, held.Epoch, uint32(held.Queued)
	if errno == 0 && held.Addr != 0 {
		z.data, z.token = held.Addr, held.Token
		s.st.CountZcopy(held.Now)
		// The datagrams queued in the box count as received now, as each would at its own call.
		for _, l := range held.QueuedLen[:held.Queued] {
			e.countOne(s, true, false, int(l))
			s.st.CountZcopy(held.Now)
		}
	}
	return result(n, errno)
}

// unbox detaches the preload library's box of fd from s (fd no longer names s, which lives on
// through another fd): the records queued in it stay with the socket.
func (e *Engine) unbox(fd int, s *Socket) {
	if s.typ != sockDgram {
		return
	}
	if h, ok := s.transport().(transport.Holder); ok {
		h.Unbox(fd)
	}
}

// zcopyFree serves OpZcopyFree: the records of the tokens go back to their rings. ENOENT when
// the socket held any of them no more (the others are freed).
func (e *Engine) zcopyFree(s *Socket, c *transport.Call) int64 {
	tokens := tokensAt(c.A[0], int(c.A[1]))
	h, ok := s.transport().(transport.Holder)
	if !ok {
		return -int64(unix.ENOENT)
	}
	// No tokens: the frees deferred in the socket's box only (Release folds them in first).
	n, now := h.Release(tokens)
	s.st.SetHeld(now)
	if n != len(tokens) {
		return -int64(unix.ENOENT)
	}
	return 0
}

// boxRecv serves a plain receive (read, recvfrom or recvmsg) that the preload library made through
// OpZcopyRecv (z.op; shim/preload/box.c): the receive as the program made it, then, on a
// transport that queues in boxes, the datagrams that wait after it queued in the fd's box, where
// the library's next receives take them without entering the engine. The advice tells the library
// to stop asking (a stream socket) or to make the fd's box.
func (e *Engine) boxRecv(s *Socket, c *transport.Call, z *zcopyArgs) int64 {
	rc := transport.Call{Op: transport.Op(z.op), FD: c.FD}
	switch rc.Op {
	case transport.OpRead:
		rc.A = [5]uintptr{z.buf, z.len}
	case transport.OpRecvfrom:
		rc.A = [5]uintptr{z.buf, z.len, uintptr(uint32(z.flags)), z.from, z.fromlen}
	case transport.OpRecvmsg:
		rc.A = [5]uintptr{z.buf, uintptr(uint32(z.flags))} // z.buf: the msghdr
	default:
		return -int64(unix.EINVAL)
	}
	if s == nil {
		// A stale table flag, as in Call: the kernel answers.
		e.cfg.Table.Set(c.FD, 0)
		return result(kernelDo(&rc))
	}
	if s.typ != sockDgram {
		z.advice = adviceNoBox
		return e.transfer(s, &rc)
	}
	r := e.transfer(s, &rc)
	h, ok := s.transport().(transport.Holder)
	if !ok || r < 0 {
		return r
	}
	held := heldPool.Get().(*transport.Held)
	defer heldPool.Put(held)
	*held = transport.Held{Box: z.box}
	if !h.Prefetch(c.FD, held) {
		return r
	}
	if z.box == 0 {
		z.advice = adviceBox
		return r
	}
	z.epoch, z.queued = held.Epoch, uint32(held.Queued)
	// The datagrams queued in the box count as received now, as each would at its own call.
	for _, l := range held.QueuedLen[:held.Queued] {
		e.countOne(s, true, false, int(l))
	}
	return r
}

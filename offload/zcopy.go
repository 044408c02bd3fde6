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
	rc := z.call(transport.OpRecvfrom, c.FD)
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
		e.countQueued(s, held, true)
	}
	return result(n, errno)
}

// countQueued counts the datagrams a receive queued in the box as received now, as each would be
// at its own call (zcopy: as handed over in place too).
func (e *Engine) countQueued(s *Socket, held *transport.Held, zcopy bool) {
	if held.Queued == 0 {
		return
	}
	bytes := 0
	for _, l := range held.QueuedLen[:held.Queued] {
		bytes += int(l)
		if zcopy {
			s.st.CountZcopy(held.Now)
		}
	}
	// one add per counter for the whole queue: four locked adds per datagram were an eighth of a
	// throughput receiver's time
	s.counters.RxPackets.Add(uint64(held.Queued))
	s.counters.RxBytes.Add(uint64(bytes))
	s.st.CountRxN(false, held.Queued, bytes)
}

// call is the receive the arguments describe, as op (OpRead, OpRecvfrom, OpRecvmsg: buf is the
// msghdr) on fd.
func (z *zcopyArgs) call(op transport.Op, fd int) transport.Call {
	c := transport.Call{Op: op, FD: fd}
	switch op {
	case transport.OpRead:
		c.A = [5]uintptr{z.buf, z.len}
	case transport.OpRecvfrom:
		c.A = [5]uintptr{z.buf, z.len, uintptr(uint32(z.flags)), z.from, z.fromlen}
	case transport.OpRecvmsg:
		c.A = [5]uintptr{z.buf, uintptr(uint32(z.flags))}
	}
	return c
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
func (e *Engine) boxRecv(s *Socket, fd int, z *zcopyArgs) int64 {
	op := transport.Op(z.op)
	if op != transport.OpRead && op != transport.OpRecvfrom && op != transport.OpRecvmsg {
		return -int64(unix.EINVAL)
	}
	rc := z.call(op, fd)
	if s == nil {
		return e.stale(&rc)
	}
	r := e.transfer(s, &rc)
	if s.typ != sockDgram {
		z.advice = adviceNoBox
		return r
	}
	h, ok := s.transport().(transport.Holder)
	if !ok || r < 0 {
		return r
	}
	held := heldPool.Get().(*transport.Held)
	defer heldPool.Put(held)
	*held = transport.Held{Box: z.box}
	switch {
	case !h.Prefetch(fd, held):
	case z.box == 0:
		z.advice = adviceBox
	default:
		z.epoch, z.queued = held.Epoch, uint32(held.Queued)
		e.countQueued(s, held, false)
	}
	return r
}

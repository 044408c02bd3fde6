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

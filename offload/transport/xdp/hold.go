package xdp

import (
	"sync/atomic"
	"syscall"

	"github.com/goxio/goxio/offload/transport"
)

// Zero-copy receive (VMA's recvfrom_zcopy and free_packets): a frame the socket's queue holds is
// handed to the program where it lies in the UMEM, and goes back to the fill ring only when the
// program frees it (or closes the socket). Held frames take room in the socket's queue as queued
// ones do (queue.go push): a program that holds a queue's worth gets nothing more, its datagrams
// dropped and counted as with a full receive buffer, until it frees. A frame belongs to the
// interface's AF_XDP socket, not to the sender, so it outlives the sender and its socket; closing
// this socket gives its held frames back (the program must not read them after close).
//
// Handles are numbers, not addresses: a slot of the socket's hold table and the hold's
// generation (process-wide), so a freed, foreign or made-up handle is refused without touching
// the UMEM. Datagrams from the kernel socket, a fork's spill and peeks are copied, as by recvfrom.

var _ transport.Holder = (*UDP)(nil)

// holdGen numbers the holds of every socket of the process: a handle of one socket never names
// a frame of another's (until 2^32 holds later).
var holdGen atomic.Uint32

// holdTable is a socket's table of held frames; guarded by rxQueue.mu.
type holdTable struct {
	slots []holdSlot
	free  int32 // the first free slot + 1; 0: none
}

// holdSlot is one slot: the frame held (nil when free), its hold's generation and the next free
// slot + 1.
type holdSlot struct {
	b    *rxBuf
	gen  uint32
	next int32
}

// add records b as held and returns its handle.
func (t *holdTable) add(b *rxBuf) uint64 {
	i := t.free - 1
	if i < 0 {
		i = int32(len(t.slots))
		t.slots = append(t.slots, holdSlot{})
	}
	s := &t.slots[i]
	t.free = s.next
	s.b, s.next = b, 0
	if s.gen = holdGen.Add(1); s.gen == 0 {
		s.gen = holdGen.Add(1)
	}
	return uint64(s.gen)<<32 | uint64(i+1)
}

// take removes the frame handle names from the table and returns it; nil when handle names no
// frame held now.
func (t *holdTable) take(handle uint64) *rxBuf {
	i := int64(handle&0xffffffff) - 1
	if i < 0 || i >= int64(len(t.slots)) {
		return nil
	}
	s := &t.slots[i]
	if s.b == nil || s.gen != uint32(handle>>32) {
		return nil
	}
	b := s.b
	s.b, s.gen, s.next = nil, 0, t.free
	t.free = int32(i + 1)
	return b
}

// takeAll empties the table, appending its frames to out.
func (t *holdTable) takeAll(out []*rxBuf) []*rxBuf {
	for _, s := range t.slots {
		if s.b != nil {
			out = append(out, s.b)
		}
	}
	*t = holdTable{}
	return out
}

// ReceiveHeld performs c (a recvfrom) holding a queued frame for the program: h gets the
// payload's address in the UMEM and its token, the source address is written as recvfrom writes
// it, and the result is the datagram's length. Any other datagram (the kernel socket's, a
// spilled one, an empty one, or a peek) is copied into c's buffer, h.Addr left 0.
func (u *UDP) ReceiveHeld(c transport.Call, h *transport.Held) (int, syscall.Errno, bool) {
	if c.Op != transport.OpRecvfrom {
		return u.TransferVia(c)
	}
	if !u.enter() {
		return -1, syscall.EBADF, false
	}
	defer u.exit()
	return u.recv(&c, h)
}

// Prefetch queues nothing: AF_XDP frames are not queued in boxes.
func (u *UDP) Prefetch(int, *transport.Held) bool { return false }

// Release gives the frames of tokens back to the fill ring; tokens that name none held now are
// skipped. It returns how many it freed and how many frames are held after it.
func (u *UDP) Release(tokens []uint64) (freed, held int) {
	if !u.enter() {
		return 0, 0
	}
	defer u.exit()
	q := u.q
	var arr [16]*rxBuf
	bufs := arr[:0]
	q.mu.Lock()
	for _, t := range tokens {
		if b := q.holds.take(t); b != nil {
			bufs = append(bufs, b)
		}
	}
	q.held -= len(bufs)
	held = q.held
	q.mu.Unlock()
	for _, b := range bufs {
		b.release() // outside the queue's lock: it takes the AF_XDP socket's
	}
	return len(bufs), held
}

// Unbox does nothing: the transport queues nothing in the preload library's box.
func (u *UDP) Unbox(int) {}

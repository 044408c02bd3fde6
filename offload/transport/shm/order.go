package shm

import (
	"net/netip"
	"sync"
	"sync/atomic"
)

// A socket's datagrams reach a goxio receiver two ways: through a ring, or through the kernel
// socket the receiver also reads (a send before the receiver was published or before the engine
// had the sender, the library's shortcut for destinations it found without a receiver, a send
// with flags or ancillary data the rings do not carry, a datagram too large for them). The
// kernel would deliver one socket's datagrams in the order it sent them, and a program may rely
// on that (a sequence number check, a protocol whose messages follow each other). The receiver
// takes its rings before its kernel socket, so a ring datagram that follows kernel datagrams of
// its socket is marked (offload/shm kindAfterKernel): a receive that meets the mark takes the
// kernel socket's datagrams first (kernelFirst, olderFirst in lazy.go).
//
// Which ring datagrams follow kernel ones: the socket counts the sends the kernel served (its
// own, the trampoline's into the statistics slot, KernelTx, and the early phase's before the
// engine had the socket, kernelfirst.go). A ring datagram to a
// destination is marked when the count moved since the last ring datagram to that destination
// was marked (or none was). The count is read before the send and recorded after it: a kernel
// send that completed before the read is in the receiver's kernel socket before the marked
// datagram is in its ring; one that completes after it moves the count, and the next ring
// datagram is marked again. Concurrent senders may mark one datagram more than needed, never
// one less. A mark costs the receiver one look at its kernel socket; a socket whose sends all
// go through rings, or which stopped sending through the kernel, marks none.
//
// Not covered: a ring datagram followed by a kernel datagram of the same socket (the receiver
// may take the kernel one first when it looks there while the ring one waits); the kernel's
// datagrams carry no mark. Ancillary data that only sets TTL, TOS, hop limit or traffic class
// does not send a datagram to the kernel (udpcall.Tx.CtlDroppable), so DSCP or ECN marks on some
// datagrams keep them in order with the others.

// orderSlots is the size of a socket's table of the destinations it marked a datagram to: a
// collision only costs one more mark.
const orderSlots = 64

// sendOrder is a socket's record of its kernel sends and of the ring datagrams it marked.
type sendOrder struct {
	kernel atomic.Uint64 // sends the transport itself made through the kernel and that succeeded
	mu     sync.Mutex
	marked *[orderSlots]orderMark // made at the first mark
}

// orderMark: a datagram to dst was marked when the kernel count was seen-1.
type orderMark struct {
	dst  netip.AddrPort
	seen uint64
}

// kernelSent counts a send the transport made through the kernel.
func (u *UDP) kernelSent() { u.order.kernel.Add(1) }

// kernelSends returns how many of the socket's sends the kernel served so far, by the transport
// or by the trampoline (each counted at least once).
func (u *UDP) kernelSends() uint64 {
	k := u.order.kernel.Load()
	if p := u.KernelTx; p != nil {
		k += atomic.LoadUint64(p)
	}
	return k
}

// markFor reports whether the next ring datagram through r must be marked (it may follow kernel
// datagrams of the socket that its receiver has not taken yet), and the kernel count to record
// with ordered once it is in the ring. A route that saw the current count answers without a lock.
func (u *UDP) markFor(r *route) (seen uint64, mark bool) {
	seen = u.kernelSends() + 1
	if seen == 1 || r.seen.Load() == seen {
		return seen, false // no kernel send ever, or none since this route's last mark
	}
	u.order.mu.Lock()
	defer u.order.mu.Unlock()
	if m := u.order.marked; m != nil {
		if e := &m[orderSlot(r.dst)]; e.dst == r.dst && e.seen == seen {
			r.seen.Store(seen) // a route made again (a new directory generation, another destination between)
			return seen, false
		}
	}
	return seen, true
}

// ordered records that a marked datagram through r went into the ring with the kernel count
// markFor returned.
func (u *UDP) ordered(r *route, seen uint64) {
	u.order.mu.Lock()
	if u.order.marked == nil {
		u.order.marked = new([orderSlots]orderMark)
	}
	u.order.marked[orderSlot(r.dst)] = orderMark{dst: r.dst, seen: seen}
	u.order.mu.Unlock()
	r.seen.Store(seen)
}

// orderSlot is dst's slot in the table of marks.
func orderSlot(dst netip.AddrPort) int {
	a := dst.Addr().As16()
	h := uint64(dst.Port())
	for _, b := range a {
		h = h*31 + uint64(b)
	}
	return int(h % orderSlots)
}

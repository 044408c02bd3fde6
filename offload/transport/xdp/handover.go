package xdp

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// BeforeFork sends every socket of the Env back to the kernel (GiveUp) before the process
// forks: a child cannot run Go, so it reads its inherited sockets through the kernel only, and
// frames steered to this process's AF_XDP sockets would never reach it. The engine spills each
// socket's queued datagrams (HandOver) first, as it does for the shared-memory rings.
func (e *Env) BeforeFork() {
	e.mu.Lock()
	socks := make([]*UDP, 0, len(e.socks))
	for u := range e.socks {
		socks = append(socks, u)
	}
	e.mu.Unlock()
	for _, u := range socks {
		u.GiveUp(transport.ReasonForkedChild)
	}
}

// TakeQueued empties the socket's queue, oldest first, handing each datagram's payload (valid
// only during the call), source and the source's scope id (a link-local IPv6 one's receiving
// interface, else 0) to fn, and gives the frames back to the fill rings.
func (u *UDP) TakeQueued(fn func(payload []byte, src netip.AddrPort, scope uint32)) int {
	if !u.enter() {
		return 0
	}
	defer u.exit()
	n := 0
	for {
		q := u.q
		q.mu.Lock()
		if q.n == 0 {
			q.mu.Unlock()
			return n
		}
		b := q.buf[q.head]
		q.buf[q.head] = nil
		q.head = (q.head + 1) % len(q.buf)
		q.n--
		q.depth.Store(int32(q.n))
		q.mu.Unlock()
		fn(b.payload, b.src, b.scope)
		b.release()
		n++
	}
}

// HandOver takes every datagram waiting for the socket (on the RX rings too), in the order a
// receive would return them, as (source sockaddr, payload) pairs the caller owns (the name as a
// receive gives it: sockaddr_in, or sockaddr_in6 for an AF_INET6 socket): the engine
// spills them before a fork, then sends the socket back to the kernel (GiveUp).
func (u *UDP) HandOver() [][2][]byte {
	if !u.enter() {
		return nil
	}
	defer u.exit()
	u.spill.Begin() // ended by SetSpill or GiveUp
	if !u.kernelOnly.Load() {
		// Every frame waiting on the RX rings, not one batch: the rings are not read again
		// for this socket once it went back to the kernel.
		for i := 0; i < maxHandOverPolls && u.env.pollRx() > 0; i++ {
		}
	}
	var out [][2][]byte
	u.TakeQueued(func(payload []byte, src netip.AddrPort, scope uint32) {
		var sa [unix.SizeofSockaddrInet6]byte
		name := append([]byte(nil), u.srcName(&sa, src, scope)...)
		out = append(out, [2][]byte{name, append([]byte(nil), payload...)})
	})
	return out
}

// maxHandOverPolls bounds the RX ring batches HandOver takes (a full RX ring of the default size
// is 64 batches; the peer may keep sending meanwhile).
const maxHandOverPolls = 256

// SetSpill gives the socket the region its queued datagrams were spilled to at a fork, before the
// socket goes back to the kernel (GiveUp): select, poll and epoll report the socket readable while
// the region holds datagrams; the receives are served from it by the C side, and the ones already
// inside the engine by spill.Take. Threads of ours asleep on the socket are woken to look at it
// (they counted themselves before their last look, which includes the region).
func (u *UDP) SetSpill(region []byte) {
	u.spill.Set(region)
	q := u.q
	if q.sleepers.Load() > 0 {
		if w := q.bellW.Load(); w >= 0 && !q.pending.Swap(true) {
			q.wakes.Add(1)
			writeByte(int(w)) // a full pipe is awake already
		}
	}
}

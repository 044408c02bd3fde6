package shm

import (
	"syscall"

	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
)

// A socket that gets its port from a send (the kernel binds an unbound socket at its first send)
// opens its inbox and publishes itself only at a later data call: a client that makes a socket
// per request (send one datagram, receive the answer, close) would otherwise pay for an inbox
// file, its statistics slot and two directory changes per request, which every goxio sender in
// the namespace then pays again (a new directory generation empties their route caches). Until
// it opens its inbox the socket receives through the kernel socket, where goxio peers, finding
// no entry for it, send; its own sends use rings as any socket's do.
//
// The order of the kernel's delivery is kept across the opening:
//   - A receive asleep in the kernel socket without the inbox would never see a ring datagram:
//     the inbox is published only while no receive sleeps there (kernelRx) and no thread of ours
//     sleeps in select, poll or epoll_wait on the socket (sleepers; they add the doorbell of a
//     socket that opened its inbox after they marked themselves, and look again). Both sides
//     count themselves before they look at the other's (sequentially consistent atomics), so
//     at least one sees the other. Otherwise a later call publishes it.
//   - A goxio peer may have sent datagrams through the kernel before it found the new entry,
//     and then the next ones through a ring: until the kernel socket is found empty while a ring
//     datagram waits, a receive takes the kernel socket's datagrams first (olderFirst).

// lazyAfter is the data call, counted from the one after the send that gave the socket its port,
// at which the socket opens its inbox: a request and its answer never open one, a socket that
// keeps talking does at its second request.
const lazyAfter = 2

// boundBySend records the port the kernel gave the socket at a send; the inbox comes later
// (lazyCall).
func (u *UDP) boundBySend(fd int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.inbox.Load() != nil || u.published {
		return
	}
	if u.takePortLocked(fd) {
		u.lazy.Store(true)
	}
}

// lazyCall counts a data call of a lazy socket and opens (or publishes) its inbox from the
// lazyAfter-th on.
func (u *UDP) lazyCall(fd int) {
	if u.lazyCalls.Add(1) < lazyAfter {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.lazy.Load() && !u.closed && u.gaveUp == transport.ReasonNone {
		u.openLocked(fd)
	}
}

// publishable reports whether no thread of ours waits for the socket without its inbox's
// doorbell: no receive asleep in the kernel socket, nobody asleep in select, poll or epoll_wait.
// The inbox is stored before the call.
func (u *UDP) publishable() bool {
	return u.kernelRx.Load() == 0 && u.sleepers.Load() == 0
}

// olderFirst takes a datagram from the kernel socket before a ring datagram while kernelFirst is
// set: done with the kernel's datagram or error. Everything a peer sent through the kernel before
// its first ring datagram was queued before that datagram was written, so the kernel socket is
// looked at only when a ring datagram waits (a socket whose peers all send through the kernel
// pays no extra system call), and once it is empty then, kernelFirst is cleared. empty reports
// that the rings hold nothing (refreshed): the caller skips its own look at them, so a poll
// costs what it did before.
func (u *UDP) olderFirst(c *transport.Call, in *ring.Inbox) (n int, errno syscall.Errno, done, empty bool) {
	if !in.Pending() {
		u.refresh(in)
		if !in.Pending() {
			return 0, 0, false, true
		}
	}
	if n, errno, done := u.kernelNow(c); done {
		return n, errno, true, false
	}
	u.kernelFirst.Store(false)
	return 0, 0, false, false
}

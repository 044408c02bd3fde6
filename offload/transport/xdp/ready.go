package xdp

import (
	"golang.org/x/sys/unix"
)

// Readiness for the engine's select, poll and epoll, with the same methods as the
// shared-memory transport's sockets, so the engine serves both alike.
//
// A socket is readable when RingReady says so or its kernel socket is readable. RingReady first
// drains every RX ring into the sockets' queues, so any thread that asks makes progress for all
// sockets. A select, poll or epoll that sleeps also sleeps on the socket's bell (Bell): an epoll
// fd of the library's own holding the socket's wake pipe and every AF_XDP socket of the Env. It
// becomes readable when a frame arrives on an RX ring (for any socket: RingReady takes it) or
// when another thread queued a frame for this socket. Once a socket has its bell, every frame
// queued for it writes one byte to the wake pipe unless an iomux thread polls it (Spin) or a
// byte is waiting there already; Rang and Quiet empty the pipe.

// RingReady reports whether a datagram waits in the socket's queue, after taking the frames
// waiting on the RX rings (or in the spill region of a fork).
func (u *UDP) RingReady() bool {
	if !u.enter() {
		return false
	}
	defer u.exit()
	if u.spill.Left() {
		return true
	}
	// The RX rings are drained even when the queue holds a datagram already, and also for a
	// socket that went back to the kernel: the frames waiting there make the bell readable, and
	// a watcher that does not take them would wake again at once (and an edge-triggered one
	// would not see the new arrivals).
	u.env.pollRx()
	return u.q.depth.Load() > 0
}

// Spin marks (on) or unmarks a thread polling the socket in select, poll or epoll: queued frames
// do not write to the wake pipe while somebody polls. Every Spin(true) is followed by one
// Spin(false).
func (u *UDP) Spin(on bool) {
	if on {
		u.q.spinners.Add(1)
	} else {
		u.q.spinners.Add(-1)
	}
}

// Sleep marks (on) or unmarks a thread of this process asleep in the kernel waiting for the
// socket (select, poll, epoll_wait); mark before the last look at the queue (RingReady). While
// marked, every frame queued for the socket writes to its wake pipe (spinning threads or not).
// Every Sleep(true) is followed by one Sleep(false).
func (u *UDP) Sleep(on bool) {
	if on {
		u.q.sleepers.Add(1)
	} else {
		u.q.sleepers.Add(-1)
	}
}

// Bell is the fd select, poll and epoll sleep on for the socket besides its kernel fd (made on
// first use, and given the AF_XDP sockets of interfaces attached since): readable means "call
// RingReady again". -1 for a socket that went back to the kernel or has no fd left.
func (u *UDP) Bell() int {
	if !u.enter() {
		return -1
	}
	defer u.exit()
	if u.kernelOnly.Load() {
		return -1
	}
	xs := *u.env.xsks.Load()
	if w := u.watch.Load(); w >= 0 && int(u.watchN.Load()) == len(xs) {
		return int(w)
	}
	u.bellMu.Lock()
	defer u.bellMu.Unlock()
	if u.users.Closed() {
		return -1
	}
	w := int(u.watch.Load())
	if w < 0 {
		b := u.ensureBellLocked()
		if b < 0 {
			return -1
		}
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			u.env.log.Info("xdp: no bell for select, poll and epoll")
			return -1
		}
		w = u.env.adopt(ep)
		if err := unix.EpollCtl(w, unix.EPOLL_CTL_ADD, b, &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
			u.env.releaseFD(w)
			unix.Close(w)
			return -1
		}
		u.watch.Store(int32(w))
		u.q.watched.Store(true)
	}
	for _, x := range xs[u.watchN.Load():] {
		// An AF_XDP socket closed meanwhile (Env.Close) is simply not watched.
		_ = unix.EpollCtl(w, unix.EPOLL_CTL_ADD, x.s.FD(), &unix.EpollEvent{Events: unix.EPOLLIN})
	}
	u.watchN.Store(int32(len(xs)))
	return w
}

// Rang is called when a select, poll or epoll saw the socket's bell readable: the wake pipe is
// emptied once the queue is (while datagrams wait, every sleeper on the bell sees it readable).
func (u *UDP) Rang() {
	if !u.enter() {
		return
	}
	defer u.exit()
	if u.q.depth.Load() == 0 {
		u.drainBell()
	}
}

// Quiet empties the wake pipe even though datagrams are queued: an edge-triggered epoll member
// already reported them, and the next queued frame writes again (a new edge). With news, not
// while another thread of ours sleeps on the socket: the pipe is its only wake-up (the
// contract's Quiet).
func (u *UDP) Quiet(news bool) {
	if news && u.q.sleepers.Load() > 0 {
		return
	}
	if !u.enter() {
		return
	}
	defer u.exit()
	u.drainBell()
}

// drainBell empties the wake pipe and lets the next queued frame write to it again. Callers look
// at the queue afterwards: a frame queued between the drain and the reset wrote nothing, but it
// is in the queue. The caller is inside a call (enter), so the pipe is open.
func (u *UDP) drainBell() {
	if b := u.bellR.Load(); b >= 0 {
		drainPipe(int(b))
	}
	u.q.pending.Store(false)
}

// Arrivals grows with every datagram queued for the socket (edge-triggered epoll).
func (u *UDP) Arrivals(int) uint64 { return u.q.arrivals.Load() }

// NextSize is the size of the datagram the next receive returns from the queue (FIONREAD);
// false when the queue is empty (the kernel socket then answers).
func (u *UDP) NextSize() (int, bool) {
	u.q.mu.Lock()
	defer u.q.mu.Unlock()
	if u.q.n == 0 {
		return 0, false
	}
	return len(u.q.buf[u.q.head].payload), true
}

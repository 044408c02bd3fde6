package xdp

// Readiness for the engine's select, poll and epoll.
//
// A socket is readable when RingReady says so or its kernel socket is readable. RingReady first
// drains every RX ring into the sockets' queues, so any thread that asks makes progress for all
// sockets. Before sleeping, an iomux call marks each socket with Sleep(true), asks RingReady
// once more, and sleeps on the kernel fds plus WakeFDs of each socket: the wake pipe (written
// when a frame is queued for a marked socket) and the AF_XDP sockets (frames on an RX ring, for
// any socket: when one is readable, call RingReady again, which takes the frames). After the
// sleep it calls Sleep(false) and Woken with the wake pipe's revents.

// RingReady reports whether a datagram waits in the socket's queue, after taking the frames
// waiting on the RX rings.
func (u *UDP) RingReady() bool {
	if !u.enter() {
		return false
	}
	defer u.exit()
	if u.q.depth.Load() > 0 {
		return true
	}
	if !u.kernelOnly.Load() {
		u.env.pollRx()
	}
	return u.q.depth.Load() > 0
}

// Sleep marks (on) or unmarks a thread about to sleep on the socket in select, poll or epoll:
// while marked, a frame queued for the socket writes to its wake pipe. Every Sleep(true) is
// followed by one Sleep(false).
func (u *UDP) Sleep(on bool) {
	if on {
		u.q.sleepers.Add(1)
	} else {
		u.q.sleepers.Add(-1)
	}
}

// WakeFDs appends the fds an iomux call sleeps on for this socket besides its kernel fd: the
// wake pipe (made on first use) and every AF_XDP socket; POLLIN on any of them means "call
// RingReady again".
func (u *UDP) WakeFDs(fds []int) []int {
	if !u.enter() {
		return fds
	}
	defer u.exit()
	if u.kernelOnly.Load() {
		return fds
	}
	if b := u.ensureBell(); b >= 0 {
		fds = append(fds, b)
	}
	for _, x := range *u.env.xsks.Load() {
		fds = append(fds, x.s.FD())
	}
	return fds
}

// Woken empties the wake pipe after a sleep saw it readable.
func (u *UDP) Woken() {
	if !u.enter() {
		return
	}
	defer u.exit()
	if b := u.bellR.Load(); b >= 0 {
		drainPipe(int(b))
	}
}

// Arrivals grows with every datagram queued for the socket (edge-triggered epoll).
func (u *UDP) Arrivals() uint64 { return u.q.arrivals.Load() }

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

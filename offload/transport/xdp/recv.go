package xdp

import (
	"encoding/binary"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
	"github.com/goxio/goxio/offload/transport/udpcall"
)

// recv performs a receive call. With h (a zero-copy recvfrom, hold.go), a frame from the queue is
// held for the program instead of copied.
func (u *UDP) recv(c *transport.Call, h *transport.Held) (n int, errno syscall.Errno, viaOS bool) {
	if u.kernelOnly.Load() && u.q.depth.Load() == 0 && !u.spill.Left() {
		return u.kernel(c)
	}
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			n, errno, viaOS = -1, unix.EFAULT, false
		}
	}()
	if c.Op == transport.OpRecvmmsg {
		return u.recvmmsg(c)
	}
	var arr [udpcall.MaxBufs][]byte
	rc, ok := udpcall.ParseRx(c, arr[:0])
	if !ok || rc.Flags&udpcall.KernelRecvFlags != 0 {
		return u.kernel(c)
	}
	n, errno, viaOS = u.receiveInto(c, &rc, u.nonblock() || rc.Flags&unix.MSG_DONTWAIT != 0, h)
	if rc.Bad && errno == 0 {
		return -1, unix.EFAULT, viaOS // the datagram is gone, as in the kernel
	}
	return n, errno, viaOS
}

// recvmmsg receives up to vlen datagrams, each as recvmsg would; MSG_WAITFORONE makes every
// datagram after the first non-blocking; the timeout is checked after each datagram.
func (u *UDP) recvmmsg(c *transport.Call) (int, syscall.Errno, bool) {
	// Recvmmsg hands the call to function values, so the compiler moves what it gets to the
	// heap: a copy keeps every other call's Call on the stack (no allocation per call, no
	// garbage collections under load).
	mc := *c
	return udpcall.Recvmmsg(&mc, u.nonblock(), u.receive, u.kernel)
}

// maxSleepFDs bounds the AF_XDP sockets a receive sleeps on; with more, it sleeps at most
// overflowSleep and looks again.
const (
	maxSleepFDs   = 14
	overflowSleep = 1e6 // ns
)

// receive waits for one datagram from the queue or the kernel socket. Each poll first takes the
// socket's queue, then drains every RX ring into the queues, then (every RxUDPPollOSRatio
// polls, and always for a non-blocking call) reads the kernel socket. A blocking call spins
// RxPoll polls, then sleeps in ppoll on the kernel socket, the wake pipe and the AF_XDP sockets.
// SO_RCVTIMEO gives EAGAIN when it expires; a signal handler that ran on this thread gives
// EINTR, unless it has SA_RESTART and the socket no receive timeout.
func (u *UDP) receive(c *transport.Call, rc *udpcall.Rx, nonblock bool) (int, syscall.Errno, bool) {
	return u.receiveInto(c, rc, nonblock, nil)
}

// receiveInto is receive, holding the frame it takes from the queue for the program when h is
// set (fromQueue).
func (u *UDP) receiveInto(c *transport.Call, rc *udpcall.Rx, nonblock bool, h *transport.Held) (int, syscall.Errno, bool) {
	p := &u.env.p
	checkOS := nonblock
	viaOS := false
	kernel := udpcall.KernelLook{
		Now:   func() (int, syscall.Errno, bool) { return u.kernelNow(c) },
		Shut:  func() bool { return u.readShut(c.FD) },
		Ratio: p.RxUDPPollOSRatio,
	}
	var w wait.Call
	var own udpcall.OwnUse // the call sleeps on the socket's own reference
	defer own.End(&u.own)
	// Spin first unless the socket's receives typically wait long (wait.Avg), eagerly
	// (wait.Spin: giving the CPU away every few polls from the start, for the peer or the
	// thread that takes the frames from the RX ring when it shares this CPU), and again after
	// each wake-up.
	n, errno := wait.Loop(&w, wait.Policy{
		Polls: p.RxPoll, Cold: !u.waitAvg.SpinWorth(), Look: u.waitAvg.Long(), Eager: true, Respin: true,
		Timeout: u.rcvTimeo.Load(), Signals: p.Signals,
	}, wait.Steps{
		Try: func(l wait.Look) (int, syscall.Errno, bool) {
			if n, ok := u.fromQueue(rc, h); ok {
				u.waitAvg.Waited(&w)
				return n, 0, true
			}
			if !u.kernelOnly.Load() && u.env.pollRx() > 0 {
				if n, ok := u.fromQueue(rc, h); ok {
					u.waitAvg.Waited(&w)
					return n, 0, true
				}
			}
			// After the queue: what a fork's hand-over took from it is in the spill region
			// by the time spill.Take looks.
			if n, ok := u.spill.Take(rc); ok {
				return n, 0, true
			}
			if n, errno, got, done := kernel.Look(&checkOS, l, nonblock); done {
				if got {
					u.osRx.Add(1)
					u.waitAvg.Waited(&w)
				}
				viaOS = true
				return n, errno, true
			}
			if nonblock {
				return -1, unix.EAGAIN, true
			}
			return 0, 0, false
		},
		Sleep: func() (int, syscall.Errno, bool) {
			own.Take(&u.own, c, u.env.adopt)
			r0, errno := u.sleep(c.FD, &w)
			if errno == unix.EINTR {
				return 0, 0, false // the signal counters decide: EINTR or, with SA_RESTART, wait on
			}
			if errno != 0 {
				return -1, errno, true
			}
			checkOS = r0 != 0
			return 0, 0, false
		},
	})
	return n, errno, viaOS
}

// sleep waits until the kernel socket fd is readable, a frame arrives on an RX ring, another
// thread queues a frame for this socket, or the wait's deadline; it returns the kernel socket's
// revents. The sleeper count goes up before the last look at the queue, and a thread that queues
// a frame reads it after queueing: either the sleeper sees the frame or the queuer sees the
// sleeper and writes to the wake pipe.
func (u *UDP) sleep(fd int, w *wait.Call) (int16, syscall.Errno) {
	bell := u.ensureBell()
	var fds [2 + maxSleepFDs]unix.PollFd
	fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}
	fds[1] = unix.PollFd{Fd: int32(bell), Events: unix.POLLIN}
	n := 2
	xs := *u.env.xsks.Load()
	if u.kernelOnly.Load() {
		xs = nil
	}
	for _, x := range xs {
		if n == len(fds) {
			break
		}
		fds[n] = unix.PollFd{Fd: int32(x.s.FD()), Events: unix.POLLIN}
		n++
	}
	limit := int64(0)
	if len(xs) > maxSleepFDs || bell < 0 {
		limit = overflowSleep
	}
	u.q.sleepers.Add(1)
	defer u.q.sleepers.Add(-1)
	if len(xs) > 0 {
		u.env.pollRx()
		for _, x := range xs {
			x.publish(publishSleeping, false)
		}
	}
	if u.q.depth.Load() > 0 || u.spill.Left() {
		return 0, 0
	}
	errno := ppoll(fds[:n], w.Timeout(limit))
	if bell >= 0 && fds[1].Revents != 0 {
		u.drainBell()
	}
	if errno != 0 {
		return 0, errno
	}
	return fds[0].Revents, 0
}

// fromQueue copies the next queued datagram into the call's buffers, or, with h and unless the
// call peeks, holds its frame for the program (h gets the payload's address and token; an empty
// datagram is copied, there being nothing to hand over). A fault on the program's memory still
// consumes the datagram (the kernel drops it too) and panics to the caller.
func (u *UDP) fromQueue(rc *udpcall.Rx, h *transport.Held) (int, bool) {
	q := u.q
	if q.depth.Load() == 0 {
		return 0, false
	}
	peek := rc.Flags&unix.MSG_PEEK != 0
	q.mu.Lock()
	if q.n == 0 {
		q.mu.Unlock()
		return 0, false
	}
	b := q.buf[q.head]
	if peek {
		defer q.mu.Unlock() // the frame stays queued: copy it while nobody can take it
	} else {
		q.buf[q.head] = nil
		q.head = (q.head + 1) % len(q.buf)
		q.n--
		q.depth.Store(int32(q.n))
		if h != nil && len(b.payload) > 0 {
			h.Addr, h.Token = umem.Addr(b.payload), q.holds.add(b)
			q.held++
			h.Now = q.held
		} else {
			defer b.release()
		}
		q.mu.Unlock()
		if capture.On() {
			capture.Frame(capture.XDP, capture.In, int(u.capFD.Load()), 0, b.f.Data)
		}
		u.xdpRx.Add(1)
		u.xdpRxBytes.Add(uint64(len(b.payload)))
	}
	var sa [unix.SizeofSockaddrInet6]byte
	if h != nil && h.Addr != 0 {
		rc.DeliverName(u.srcName(&sa, b.src, b.scope))
		return len(b.payload), true
	}
	return rc.Deliver(u.srcName(&sa, b.src, b.scope), b.payload), true
}

// readShut reports whether the socket was shut down for reading.
func (u *UDP) readShut(fd int) bool {
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
	errno := ppoll(fds[:], &unix.Timespec{})
	return errno == 0 && fds[0].Revents&unix.POLLRDHUP != 0
}

// kernelNow makes the program's receive call on the kernel socket without blocking; done is
// false when nothing was queued there.
func (u *UDP) kernelNow(c *transport.Call) (n int, errno syscall.Errno, done bool) {
	nc := *c
	switch c.Op {
	case transport.OpRead:
		nc.Op = transport.OpRecvfrom
		nc.A[2], nc.A[3], nc.A[4] = unix.MSG_DONTWAIT, 0, 0
	case transport.OpReadv:
		n, e := recvvRaw(c.FD, c.A[0], int(c.A[1]), unix.MSG_DONTWAIT)
		return keepWaiting(n, e)
	case transport.OpRecvfrom:
		nc.A[2] |= unix.MSG_DONTWAIT
	case transport.OpRecvmsg:
		nc.A[1] |= unix.MSG_DONTWAIT
	}
	n, e := kernel.Do(&nc)
	return keepWaiting(n, e)
}

// keepWaiting turns EAGAIN of a kernel receive into "not done".
func keepWaiting(n int, e syscall.Errno) (int, syscall.Errno, bool) {
	if e == unix.EAGAIN {
		return 0, 0, false
	}
	return n, e, true
}

// kernel performs a receive call on the kernel socket.
func (u *UDP) kernel(c *transport.Call) (int, syscall.Errno, bool) {
	n, errno := kernelDo(c)
	if errno == 0 {
		u.osRx.Add(1)
	}
	return n, errno, true
}

// kernelDo performs any call on the kernel socket.
func kernelDo(c *transport.Call) (int, syscall.Errno) { return kernel.Do(c) }

// srcName writes a received datagram's source into sa as the kernel's recvfrom names it for the
// socket's family (sockaddr_in, or sockaddr_in6: an IPv4 source v4-mapped, flow info 0, the scope
// id of a link-local one) and returns that part of sa.
func (u *UDP) srcName(sa *[unix.SizeofSockaddrInet6]byte, src netip.AddrPort, scope uint32) []byte {
	family := unix.AF_INET
	if u.v6.Load() {
		family = unix.AF_INET6
	}
	n := sysc.PutSockaddr(sa[:], family, src)
	if n == unix.SizeofSockaddrInet6 {
		binary.NativeEndian.PutUint32(sa[24:], scope)
	}
	return sa[:n]
}

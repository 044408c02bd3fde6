package xdp

import (
	"encoding/binary"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
)

// kernelRecvFlags are the receive flags only the kernel serves (the error queue; MSG_OOB, which
// UDP refuses). MSG_PEEK, MSG_TRUNC and MSG_DONTWAIT the queue honours; the others the kernel's
// UDP ignores too.
const kernelRecvFlags = unix.MSG_ERRQUEUE | unix.MSG_OOB

// maxBufs is how many buffers a call gathers without allocating.
const maxBufs = 8

// rxCall is one receive call, parsed: where the datagram goes.
type rxCall struct {
	bufs     [][]byte
	flags    int
	namep    uintptr
	namelenp *uint32
	msg      *unix.Msghdr // recvmsg: gets msg_flags and msg_controllen
	bad      bool         // a NULL buffer: the datagram is consumed and the call fails with EFAULT
}

// recv performs a receive call.
func (u *UDP) recv(c *transport.Call) (n int, errno syscall.Errno, viaOS bool) {
	if u.kernelOnly.Load() && u.q.depth.Load() == 0 {
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
	var arr [maxBufs][]byte
	rc, ok := parseRx(c, arr[:0])
	if !ok || rc.flags&kernelRecvFlags != 0 {
		return u.kernel(c)
	}
	n, errno, viaOS = u.receive(c, &rc, u.nonblock() || rc.flags&unix.MSG_DONTWAIT != 0)
	if rc.bad && errno == 0 {
		return -1, unix.EFAULT, viaOS // the datagram is gone, as in the kernel
	}
	return n, errno, viaOS
}

// parseRx reads a receive call's arguments; false when the queue cannot serve it.
func parseRx(c *transport.Call, bufs [][]byte) (rxCall, bool) {
	var rc rxCall
	switch c.Op {
	case transport.OpRead:
		bufs, rc.bad = addBuf(bufs, c.A[0], int(c.A[1]))
	case transport.OpReadv:
		if int(c.A[1]) < 0 || int(c.A[1]) > umem.MaxIov {
			return rc, false
		}
		bufs, rc.bad = umem.IovecsOrNil(bufs, c.A[0], int(c.A[1]))
	case transport.OpRecvfrom:
		rc.flags = int(c.A[2])
		if c.A[3] != 0 && c.A[4] != 0 {
			rc.namep, rc.namelenp = c.A[3], umem.Uint32(c.A[4])
		}
		bufs, rc.bad = addBuf(bufs, c.A[0], int(c.A[1]))
	case transport.OpRecvmsg:
		return parseMsg(c.A[0], int(c.A[1]), bufs)
	default:
		return rc, false
	}
	rc.bufs = bufs
	return rc, true
}

func addBuf(bufs [][]byte, p uintptr, n int) ([][]byte, bool) {
	if p == 0 && n > 0 {
		return bufs, true
	}
	return append(bufs, umem.Bytes(p, n)), false
}

// parseMsg reads a recvmsg call from the program's msghdr at mp.
func parseMsg(mp uintptr, flags int, bufs [][]byte) (rxCall, bool) {
	var rc rxCall
	m := umem.Msghdr(mp)
	iov, iovlen := umem.MsgIov(m)
	if iovlen < 0 || iovlen > umem.MaxIov {
		return rc, false
	}
	rc.bufs, rc.bad = umem.IovecsOrNil(bufs, iov, iovlen)
	rc.flags = flags
	rc.msg = m
	if np, _ := umem.MsgName(m); np != 0 {
		rc.namep, rc.namelenp = np, &m.Namelen
	}
	return rc, true
}

// recvmmsg receives up to vlen datagrams, each as recvmsg would; MSG_WAITFORONE makes every
// datagram after the first non-blocking; the timeout is checked after each datagram.
func (u *UDP) recvmmsg(c *transport.Call) (int, syscall.Errno, bool) {
	vlen, flags := int(uint32(c.A[1])), int(int32(c.A[2]))
	if flags&kernelRecvFlags != 0 || vlen > umem.MaxIov {
		return u.kernel(c)
	}
	var deadline int64
	if c.A[3] != 0 {
		ts := umem.Timespec(c.A[3])
		if ts.Sec < 0 || ts.Nsec < 0 || ts.Nsec >= 1e9 {
			return -1, unix.EINVAL, false
		}
		deadline = nanotime() + ts.Sec*1e9 + ts.Nsec
	}
	nonblock := u.nonblock() || flags&unix.MSG_DONTWAIT != 0
	var arr [maxBufs][]byte
	count := 0
	viaOS := false
	for i := 0; i < vlen; i++ {
		mp, lenp := umem.Mmsghdr(c.A[0], i)
		rc, ok := parseMsg(mp, flags&^unix.MSG_WAITFORONE, arr[:0])
		if !ok {
			if count == 0 {
				return u.kernel(c)
			}
			break
		}
		sub := transport.Call{Op: transport.OpRecvmsg, FD: c.FD, A: [5]uintptr{mp, uintptr(rc.flags)}}
		n, errno, os := u.receive(&sub, &rc, nonblock || (count > 0 && flags&unix.MSG_WAITFORONE != 0))
		if errno != 0 {
			if count > 0 {
				break
			}
			return -1, errno, os
		}
		viaOS = viaOS || os
		*lenp = uint32(n)
		count++
		if deadline != 0 && nanotime() >= deadline {
			break
		}
	}
	return count, 0, viaOS
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
func (u *UDP) receive(c *transport.Call, rc *rxCall, nonblock bool) (int, syscall.Errno, bool) {
	p := &u.env.p
	polls := 0
	checkOS := nonblock
	var w blockState
	var spinStart int64
	kfd := -1
	for {
		if n, ok := u.fromQueue(rc); ok {
			return n, 0, false
		}
		if !u.kernelOnly.Load() && u.env.pollRx() > 0 {
			if n, ok := u.fromQueue(rc); ok {
				return n, 0, false
			}
		}
		if checkOS || (p.RxUDPPollOSRatio > 0 && polls > 0 && polls%p.RxUDPPollOSRatio == 0) {
			checkOS = false
			if n, errno, done := u.kernelNow(c); done {
				if errno == 0 {
					u.osRx.Add(1)
				}
				return n, errno, true
			}
			if !nonblock && u.readShut(c.FD) {
				return 0, 0, true // shutdown(SHUT_RD): 0 once the queue is empty
			}
		}
		if nonblock {
			return -1, unix.EAGAIN, false
		}
		if !w.started {
			w.start(u.rcvTimeo.Load(), p.Signals)
			spinStart = nanotime()
		}
		if errno := w.check(); errno != 0 {
			return -1, errno, false
		}
		if p.RxPoll < 0 || polls < p.RxPoll {
			polls++
			if polls%sysc.YieldEvery == 0 && nanotime()-spinStart > sysc.YieldAfter {
				sysc.Yield()
			}
			continue
		}
		if kfd < 0 {
			// The call's own reference to the socket, as the kernel's receive holds its file:
			// another thread closing the program's fd does not end the wait.
			if k, err := unix.FcntlInt(uintptr(c.FD), unix.F_DUPFD_CLOEXEC, highFD); err == nil {
				kfd = k
				defer unix.Close(kfd)
				c.FD = kfd
			}
		}
		r0, errno := u.sleep(c.FD, &w)
		if errno == unix.EINTR {
			continue // w.check decides: EINTR or, with SA_RESTART, wait on
		}
		if errno != 0 {
			return -1, errno, false
		}
		checkOS = r0 != 0
		polls = 0
	}
}

// highFD is where a receive's own copy of its socket goes.
const highFD = 1 << 10

// sleep waits until the kernel socket fd is readable, a frame arrives on an RX ring, another
// thread queues a frame for this socket, or the wait's deadline; it returns the kernel socket's
// revents. The sleeper count goes up before the last look at the queue, and a thread that queues
// a frame reads it after queueing: either the sleeper sees the frame or the queuer sees the
// sleeper and writes to the wake pipe.
func (u *UDP) sleep(fd int, w *blockState) (int16, syscall.Errno) {
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
	ts := w.remaining()
	if len(xs) > maxSleepFDs || bell < 0 {
		if ts == nil || ts.Nano() > overflowSleep {
			t := unix.NsecToTimespec(overflowSleep)
			ts = &t
		}
	}
	u.q.sleepers.Add(1)
	defer u.q.sleepers.Add(-1)
	if len(xs) > 0 {
		u.env.pollRx()
	}
	if u.q.depth.Load() > 0 {
		return 0, 0
	}
	errno := ppoll(fds[:n], ts)
	if bell >= 0 && fds[1].Revents != 0 {
		drainPipe(bell)
	}
	if errno != 0 {
		return 0, errno
	}
	return fds[0].Revents, 0
}

// blockState is what a blocking receive watches besides the data: the socket's receive timeout
// and the thread's signal handlers.
type blockState struct {
	started  bool
	deadline int64 // nanotime; 0: no SO_RCVTIMEO
	sig      *transport.SigCounters
	all      uint32
	intr     uint32
}

func (w *blockState) start(timeout int64, signals func() *transport.SigCounters) {
	w.started = true
	if timeout > 0 {
		w.deadline = nanotime() + timeout
	}
	if signals != nil {
		w.sig = signals()
		w.all, w.intr = atomic.LoadUint32(&w.sig.All), atomic.LoadUint32(&w.sig.Interrupting)
	}
}

// check returns EINTR when a handler ended the wait, EAGAIN when the timeout expired.
func (w *blockState) check() syscall.Errno {
	if w.sig != nil {
		if atomic.LoadUint32(&w.sig.Interrupting) != w.intr {
			return unix.EINTR
		}
		if w.deadline != 0 && atomic.LoadUint32(&w.sig.All) != w.all {
			return unix.EINTR // with a receive timeout, even SA_RESTART does not restart
		}
	}
	if w.deadline != 0 && nanotime() >= w.deadline {
		return unix.EAGAIN
	}
	return 0
}

// remaining is the sleep's timeout: nil without SO_RCVTIMEO.
func (w *blockState) remaining() *unix.Timespec {
	if w.deadline == 0 {
		return nil
	}
	ts := unix.NsecToTimespec(max(w.deadline-nanotime(), 0))
	return &ts
}

// fromQueue copies the next queued datagram into the call's buffers. A fault on the program's
// memory still consumes the datagram (the kernel drops it too) and panics to the caller.
func (u *UDP) fromQueue(rc *rxCall) (int, bool) {
	q := u.q
	if q.depth.Load() == 0 {
		return 0, false
	}
	peek := rc.flags&unix.MSG_PEEK != 0
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
		q.mu.Unlock()
		defer b.release()
		u.xdpRx.Add(1)
		u.xdpRxBytes.Add(uint64(len(b.payload)))
	}
	copied := umem.Scatter(rc.bufs, b.payload)
	if rc.namelenp != nil {
		var sa [unix.SizeofSockaddrInet4]byte
		binary.NativeEndian.PutUint16(sa[:], unix.AF_INET)
		binary.BigEndian.PutUint16(sa[2:], b.src.Port())
		a := b.src.Addr().As4()
		copy(sa[4:8], a[:])
		l := min(int(*rc.namelenp), len(sa))
		copy(umem.Bytes(rc.namep, l), sa[:l])
		*rc.namelenp = uint32(len(sa))
	}
	if rc.msg != nil {
		rc.msg.Flags = 0
		if copied < len(b.payload) {
			rc.msg.Flags = unix.MSG_TRUNC
		}
		rc.msg.SetControllen(0)
	}
	if rc.flags&unix.MSG_TRUNC != 0 {
		return len(b.payload), true
	}
	return copied, true
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

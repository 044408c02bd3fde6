package shm

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
)

// kernelRecvFlags are the receive flags only the kernel serves (the error queue; MSG_OOB, which
// UDP refuses). Other flags the rings honour (MSG_PEEK, MSG_TRUNC, MSG_DONTWAIT) or, like the
// kernel's UDP, ignore (MSG_WAITALL, MSG_NOSIGNAL, MSG_CMSG_CLOEXEC, ...).
const kernelRecvFlags = unix.MSG_ERRQUEUE | unix.MSG_OOB

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
	in := u.inbox.Load()
	if in == nil || u.kernelOnly.Load() {
		return u.kernelRecv(c)
	}
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			n, errno, viaOS = -1, unix.EFAULT, false
		}
	}()
	if c.Op == transport.OpRecvmmsg {
		return u.recvmmsg(c, in)
	}
	var arr [maxBufs][]byte
	rc, ok := parseRx(c, arr[:0])
	if !ok || rc.flags&kernelRecvFlags != 0 {
		return u.kernelRecv(c)
	}
	n, errno, viaOS = u.receive(c, in, &rc, u.nonblock() || rc.flags&unix.MSG_DONTWAIT != 0)
	if rc.bad && errno == 0 {
		// A bad buffer fails the call once a datagram is there, and the datagram is gone, as
		// in the kernel.
		return -1, unix.EFAULT, viaOS
	}
	return n, errno, viaOS
}

// parseRx reads a receive call's arguments; false when the rings cannot serve it. bufs is the
// caller's storage for the buffers. A NULL buffer makes the call bad (it still waits for, and
// consumes, a datagram). The call is returned by value and nothing stores into a pointer, so the
// caller's storage stays on its stack (no allocation per call).
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

// addBuf adds one buffer; a NULL one with a length reports bad instead.
func addBuf(bufs [][]byte, p uintptr, n int) ([][]byte, bool) {
	if p == 0 && n > 0 {
		return bufs, true
	}
	return append(bufs, umem.Bytes(p, n)), false
}

// parseMsg reads a recvmsg call from the program's msghdr at mp; false when the rings cannot
// serve it.
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
// datagram after the first non-blocking; the timeout is checked after each datagram, as the
// kernel does.
func (u *UDP) recvmmsg(c *transport.Call, in *ring.Inbox) (int, syscall.Errno, bool) {
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
		n, errno, os := u.receive(&sub, in, &rc, nonblock || (count > 0 && flags&unix.MSG_WAITFORONE != 0))
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

// receive waits for one datagram from the rings or the kernel socket: polls both (the kernel
// every RxUDPPollOSRatio polls), spinning up to RxPoll polls when the call may block, then sleeps
// in the kernel on the socket and the inbox's doorbell. It honours SO_RCVTIMEO (EAGAIN when it
// expires) and returns EINTR when a signal handler ran on this thread, unless the handler has
// SA_RESTART and the socket no receive timeout, as the kernel's blocking receive does.
func (u *UDP) receive(c *transport.Call, in *ring.Inbox, rc *rxCall, nonblock bool) (int, syscall.Errno, bool) {
	p := &u.env.p
	polls := 0
	spinning := false
	var spinStart int64
	defer func() {
		if spinning {
			in.SpinEnd()
		}
	}()
	// A non-blocking call looks at the kernel socket every time (an epoll-driven program reads
	// until EAGAIN); a blocking one every RxUDPPollOSRatio polls, and when the kernel woke it.
	checkOS := nonblock
	var w blockState
	kfd := -1
	for {
		if n, ok := u.fromRing(in, rc); ok {
			u.rings.Add(1)
			u.waited(&w)
			return n, 0, false
		}
		if checkOS || (p.RxUDPPollOSRatio > 0 && polls > 0 && polls%p.RxUDPPollOSRatio == 0) {
			checkOS = false
			if n, errno, done := u.kernelNow(c); done {
				if errno == 0 {
					u.osRx.Add(1)
					u.waited(&w)
				}
				return n, errno, true
			}
			if !nonblock && u.readShut(c.FD) {
				// shutdown(SHUT_RD): the kernel's blocking receive returns 0 once the queue is
				// empty (a non-blocking one says EAGAIN).
				return 0, 0, true
			}
		}
		if nonblock {
			return -1, unix.EAGAIN, false
		}
		if !w.started {
			w.start(u.rcvTimeo.Load(), p.Signals)
		}
		if errno := w.check(); errno != 0 {
			return -1, errno, false
		}
		if p.RxPoll < 0 || polls < p.RxPoll && (polls > 0 || u.waitAvg.Load() < spinWorth) {
			if !spinning {
				in.SpinBegin()
				spinning = true
				spinStart = nanotime()
			}
			polls++
			if polls%sysc.YieldEvery == 0 && nanotime()-spinStart > sysc.YieldAfter {
				sysc.Yield()
			}
			continue
		}
		if spinning {
			in.SpinEnd()
			spinning = false
			if in.Pending() {
				continue
			}
		}
		bell := u.ensureBell(in)
		if bell < 0 {
			return u.kernelRecv(c) // no fd for a doorbell: the socket went back to the kernel
		}
		if in.Pending() {
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
		u.sleeping(in)
		r0, r1, errno := ppoll2(c.FD, bell, w.remaining())
		if errno == unix.EINTR {
			continue // w.check decides: EINTR or, with SA_RESTART, wait on
		}
		if errno != 0 {
			return -1, errno, false
		}
		if r0 == 0 && r1 == 0 {
			return -1, unix.EAGAIN, false // SO_RCVTIMEO expired
		}
		if r1 != 0 {
			u.rang(in)
		}
		checkOS = r0 != 0 // a doorbell means ring data: fromRing takes it
	}
}

// spinWorth is the typical wait beyond which a blocking receive stops spinning before it sleeps
// (unless VMA_RX_POLL is -1): data that keeps coming this late is not worth a CPU held busy all
// that time (the wake-up costs a few microseconds), and on a machine with few CPUs the spinning
// would take them from the threads that produce the data. Once the waits get shorter again, the
// receive spins again. The typical wait is a moving average (1/16 per wait) of waits capped at
// 4 x spinWorth, so a lone long wait (the peer was descheduled) does not stop the spinning.
const spinWorth = 100e3 // ns

// waited folds how long a blocking receive waited for its datagram into the socket's average;
// receives that found data at once do not count.
func (u *UDP) waited(w *blockState) {
	if !w.started {
		return
	}
	d := min(nanotime()-w.begin, 4*spinWorth)
	old := u.waitAvg.Load()
	u.waitAvg.Store(old + (d-old)/16)
}

// highFD is where a receive's own copy of its socket goes: away from the low numbers the program
// expects to get from its own calls meanwhile.
const highFD = 1 << 10

// blockState is what a blocking receive watches besides the data: the socket's receive timeout
// and the thread's signal handlers.
type blockState struct {
	started  bool
	begin    int64 // nanotime when the wait started
	deadline int64 // nanotime; 0: no SO_RCVTIMEO
	sig      *transport.SigCounters
	all      uint32
	intr     uint32
}

func (w *blockState) start(timeout int64, signals func() *transport.SigCounters) {
	w.started = true
	w.begin = nanotime()
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
	left := max(w.deadline-nanotime(), 0)
	ts := unix.NsecToTimespec(left)
	return &ts
}

// fromRing copies the next ring datagram into the call's buffers. A fault on the program's
// memory still consumes the datagram (the kernel drops it too) and panics to the caller.
func (u *UDP) fromRing(in *ring.Inbox, rc *rxCall) (int, bool) {
	if !in.Pending() {
		in.Refresh()
		if !in.Pending() {
			u.settle(in)
			return 0, false
		}
	}
	u.rxmu.Lock()
	defer u.rxmu.Unlock()
	name, data, err := in.Peek()
	if errors.Is(err, ring.ErrEmpty) {
		in.Refresh()
		name, data, err = in.Peek()
	}
	for err == nil && len(name) == mcNameLen {
		// A group's datagram: taken while the socket's joins admit it (it may have left).
		if src := sockaddr4(name); u.admits(netip.AddrFrom4([4]byte(name[unix.SizeofSockaddrInet4:])), src.Addr()) {
			name = name[:unix.SizeofSockaddrInet4]
			break
		}
		in.Pop()
		name, data, err = in.Peek()
	}
	if err != nil {
		return 0, false
	}
	peek := rc.flags&unix.MSG_PEEK != 0
	defer func() {
		if !peek {
			in.Pop()
		}
	}()
	if !peek {
		u.countRingRx(in, len(data))
	}
	copied := umem.Scatter(rc.bufs, data)
	if rc.namelenp != nil {
		l := min(int(*rc.namelenp), len(name))
		copy(umem.Bytes(rc.namep, l), name)
		*rc.namelenp = uint32(len(name))
	}
	if rc.msg != nil {
		rc.msg.Flags = 0
		if copied < len(data) {
			rc.msg.Flags = unix.MSG_TRUNC
		}
		rc.msg.SetControllen(0)
	}
	if rc.flags&unix.MSG_TRUNC != 0 {
		return len(data), true
	}
	return copied, true
}

// readShut reports whether the socket was shut down for reading.
func (u *UDP) readShut(fd int) bool {
	r0, _, errno := ppoll2(fd, -1, &unix.Timespec{})
	return errno == 0 && r0&unix.POLLRDHUP != 0
}

// kernelNow makes the program's receive call on the kernel socket without blocking (a datagram
// is there, or an error is pending).
func (u *UDP) kernelNow(c *transport.Call) (int, syscall.Errno, bool) {
	if u.joinSnap.Load() != nil {
		// Loopback copies of ring datagrams go first; the check and the receive are one step
		// for the receive paths of this socket.
		u.rxmu.Lock()
		defer u.rxmu.Unlock()
		if !u.firstNotCopy(c.FD) {
			return 0, 0, false
		}
	}
	nc := *c
	switch c.Op {
	case transport.OpRead:
		nc.Op = transport.OpRecvfrom
		nc.A[2], nc.A[3], nc.A[4] = unix.MSG_DONTWAIT, 0, 0
	case transport.OpReadv:
		n, e := recvvRaw(c.FD, c.A[0], int(c.A[1]), unix.MSG_DONTWAIT)
		return u.keepWaiting(n, e)
	case transport.OpRecvfrom:
		nc.A[2] |= unix.MSG_DONTWAIT
	case transport.OpRecvmsg:
		nc.A[1] |= unix.MSG_DONTWAIT
	}
	n, e, _ := u.kernel(&nc)
	if e == 0 && c.Op == transport.OpRecvmsg && u.pktinfoOn.Load() {
		// The IP_PKTINFO message is the transport's, not the program's.
		m := umem.Msghdr(c.A[0])
		m.SetControllen(0)
		m.Flags &^= unix.MSG_CTRUNC
	}
	return u.keepWaiting(n, e)
}

// kernelRecv makes a receive call on the kernel socket, hiding the IP_PKTINFO messages the
// transport asked for (the program did not).
func (u *UDP) kernelRecv(c *transport.Call) (int, syscall.Errno, bool) {
	n, e, os := u.kernel(c)
	if e != 0 || !u.pktinfoOn.Load() {
		return n, e, os
	}
	u.mu.Lock()
	own := u.pktinfoOwn
	u.mu.Unlock()
	if own {
		return n, e, os
	}
	switch c.Op {
	case transport.OpRecvmsg:
		m := umem.Msghdr(c.A[0])
		m.SetControllen(0)
		m.Flags &^= unix.MSG_CTRUNC
	case transport.OpRecvmmsg:
		for i := 0; i < n; i++ {
			mp, _ := umem.Mmsghdr(c.A[0], i)
			m := umem.Msghdr(mp)
			m.SetControllen(0)
			m.Flags &^= unix.MSG_CTRUNC
		}
	}
	return n, e, os
}

// keepWaiting turns EAGAIN of a kernel receive that raced with another thread into "not done".
func (u *UDP) keepWaiting(n int, e syscall.Errno) (int, syscall.Errno, bool) {
	if e == unix.EAGAIN {
		return 0, 0, false
	}
	return n, e, true
}

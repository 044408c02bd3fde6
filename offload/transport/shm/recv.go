package shm

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/udpcall"
)

// recv performs a receive call; with hold (a recvfrom of VMA's recvfrom_zcopy), a ring's
// datagram is held in place instead of copied (zcopy.go).
func (u *UDP) recv(c *transport.Call, hold *transport.Held) (n int, errno syscall.Errno, viaOS bool) {
	in := u.inbox.Load()
	if in == nil && !u.kernelOnly.Load() && u.lazy.Load() {
		// Counted before the inbox is looked at again: the inbox is published only while no
		// receive sleeps in the kernel socket without it (lazy.go).
		u.kernelRx.Add(1)
		if in = u.inbox.Load(); in == nil {
			defer u.kernelRx.Add(-1)
			return u.kernelRecv(c)
		}
		u.kernelRx.Add(-1)
	}
	if in == nil || (u.kernelOnly.Load() && !u.spill.Left()) {
		// Back in the kernel for good; datagrams spilled at a fork go first (receive).
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
	var arr [udpcall.MaxBufs][]byte
	rc, ok := udpcall.ParseRx(c, arr[:0])
	if !ok || rc.Flags&udpcall.KernelRecvFlags != 0 {
		return u.kernelRecv(c)
	}
	n, errno, viaOS = u.receive(c, in, &rc, u.nonblock() || rc.Flags&unix.MSG_DONTWAIT != 0, hold)
	if rc.Bad && errno == 0 {
		// A bad buffer fails the call once a datagram is there, and the datagram is gone, as
		// in the kernel.
		return -1, unix.EFAULT, viaOS
	}
	return n, errno, viaOS
}

// recvmmsg receives up to vlen datagrams, each as recvmsg would; MSG_WAITFORONE makes every
// datagram after the first non-blocking; the timeout is checked after each datagram, as the
// kernel does.
func (u *UDP) recvmmsg(c *transport.Call, in *ring.Inbox) (int, syscall.Errno, bool) {
	// Recvmmsg hands the call to function values, so the compiler moves what it gets to the
	// heap: a copy keeps every other call's Call on the stack (an allocation per call made the
	// garbage collector run ~30 times a second under ping-pong, each run a latency spike).
	mc := *c
	return udpcall.Recvmmsg(&mc, u.nonblock(), func(sub *transport.Call, rc *udpcall.Rx, nonblock bool) (int, syscall.Errno, bool) {
		return u.receive(sub, in, rc, nonblock, nil)
	}, u.kernel)
}

// receive waits for one datagram from the rings or the kernel socket: polls both (the kernel as
// osRatio says), spinning up to RxPoll polls when the call may block, then sleeps in the kernel
// on the socket and the inbox's doorbell. It honours SO_RCVTIMEO (EAGAIN when it
// expires) and returns EINTR when a signal handler ran on this thread, unless the handler has
// SA_RESTART and the socket no receive timeout, as the kernel's blocking receive does.
func (u *UDP) receive(c *transport.Call, in *ring.Inbox, rc *udpcall.Rx, nonblock bool, hold *transport.Held) (int, syscall.Errno, bool) {
	p := &u.env.p
	spinning := false
	defer func() {
		if spinning {
			in.SpinEnd()
			u.wakeSleepers(in) // datagrams left for another thread asleep on the socket
		}
	}()
	// A non-blocking call looks at the kernel socket every time (an epoll-driven program reads
	// until EAGAIN); a blocking one every RxUDPPollOSRatio polls, when the kernel woke it, and at
	// its first poll when the last datagram came from there. Without that last look, a server
	// whose clients send through the kernel (programs without goxio, a new socket per request
	// before it has an inbox) spun RxUDPPollOSRatio polls on empty rings with the request waiting
	// in the kernel socket: ~14 us of a 30 us round (both ends on one CPU, the 2-CPU test
	// machine). A receive served by the rings clears it, so a ring ping-pong makes no extra call.
	checkOS := nonblock || u.lastOS.Load()
	viaOS := false
	kernel := udpcall.KernelLook{
		Now:   func() (int, syscall.Errno, bool) { return u.kernelNow(c) },
		Shut:  func() bool { return u.readShut(c.FD) },
		Ratio: osRatio(p.RxUDPPollOSRatio, in),
	}
	var w wait.Call
	var own udpcall.OwnUse // the call sleeps on the socket's own reference
	defer own.End(&u.own)
	n, errno := wait.Loop(&w, wait.Policy{
		Polls: p.RxPoll, Look: u.waitAvg.Long(), Cold: !u.waitAvg.SpinWorth(), Timeout: u.rcvTimeo.Load(), Signals: p.Signals,
		Claim: u.waitAvg.Claims(),
	}, wait.Steps{
		Try: func(l wait.Look) (int, syscall.Errno, bool) {
			for {
				empty := false // the rings were found empty just now (olderFirst)
				if u.kernelFirst.Load() {
					n, errno, done, none := u.olderFirst(c, in)
					if done {
						if errno == 0 {
							u.osRx.Add(1)
							u.noteSource(true)
						}
						viaOS = true
						return n, errno, true
					}
					empty = none
				}
				if empty {
					break
				}
				n, ok, older := u.fromRing(in, rc, hold)
				if ok {
					u.rings.Add(1)
					u.noteSource(false)
					u.waitAvg.Waited(&w)
					return n, 0, true
				}
				if !older {
					break
				}
				// The ring's next datagram follows its sender's kernel datagrams
				// (kernelfirst.go): kernelFirst is set, olderFirst looks there first.
			}
			// After the rings: what a fork's hand-over took from them is in the spill
			// region by the time spill.Take looks.
			if n, ok := u.spill.Take(rc); ok {
				return n, 0, true
			}
			if n, errno, got, done := kernel.Look(&checkOS, l, nonblock); done {
				if got {
					u.osRx.Add(1)
					u.noteSource(true)
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
		Mark: func(on bool) {
			spinning = on
			if on {
				in.SpinBegin()
			} else {
				in.SpinEnd()
			}
		},
		Sleep: func() (int, syscall.Errno, bool) {
			bell := u.ensureBell(in)
			if bell < 0 {
				// No fd for a doorbell: the socket went back to the kernel (after its
				// spill region, set before it went back).
				if u.spill.Left() {
					return 0, 0, false
				}
				n, errno, os := u.kernelRecv(c)
				viaOS = os
				return n, errno, true
			}
			u.settle(in)
			u.sleepers.Add(1) // before the last look: a spinner that stops with data wakes us
			if in.Pending() || u.spill.Left() {
				u.sleepers.Add(-1)
				return 0, 0, false
			}
			own.Take(&u.own, c, u.env.adopt)
			u.sleeping(in)
			r0, r1, errno := ppoll2(c.FD, bell, w.Timeout(0))
			u.sleepers.Add(-1)
			if errno == unix.EINTR {
				return 0, 0, false // the signal counters decide: EINTR or, with SA_RESTART, wait on
			}
			if errno != 0 {
				return -1, errno, true
			}
			if r0 == 0 && r1 == 0 {
				return 0, 0, false // SO_RCVTIMEO expired (Check says EAGAIN), or a signal came (wait.Call.Arm)
			}
			if r1 != 0 {
				u.rang(in)
			}
			checkOS = r0 != 0 // a doorbell means ring data: fromRing takes it
			return 0, 0, false
		},
	})
	return n, errno, viaOS
}

// aloneOSRatio bounds the spin polls between two looks at the kernel socket while no ring is
// attached to the inbox: the rings' part of a poll then looks at nothing (~20 ns), so
// RxUDPPollOSRatio polls (100 by default) left a datagram in the kernel socket ~2 us on average
// before the spin saw it. Measured on the 2-CPU test machine, a new UDP socket per request from a
// goxio client to a goxio server, unpinned (both ends spin on a CPU each): p50 10.2-10.5 us a round
// with 100, 8.0-8.5 us with 8 (the kernel's, both ends sharing a CPU: 8.2-9.0 us); an idle wait's
// spin, 100,000 polls, took 2.0 ms of CPU with 100, 3.5 ms with 8 (12 ms with 1: each look is a
// system call).
const aloneOSRatio = 8

// osRatio is how many spin polls of a receive pass between two looks at the kernel socket: ratio
// (RxUDPPollOSRatio; 0: none while spinning, as the user asked), at most aloneOSRatio when no ring
// is attached to in as the receive starts (read once per call, not at every poll: a ring that
// attaches meanwhile only makes that call look a little more often).
func osRatio(ratio int, in *ring.Inbox) int {
	if ratio > aloneOSRatio && !in.RingsAttached() {
		return aloneOSRatio
	}
	return ratio
}

// noteSource records where the datagram a receive took came from (lastOS), writing the shared
// word only when it changes.
func (u *UDP) noteSource(kernel bool) {
	if u.lastOS.Load() != kernel {
		u.lastOS.Store(kernel)
	}
}

// fromRing copies the next ring datagram into the call's buffers, or with hold keeps it in the
// ring for the program (hold gets its address and token). A fault on the program's memory still
// consumes the datagram (the kernel drops it too) and panics to the caller. older: the datagram
// was not taken because its sender sent through the kernel before it (kernelfirst.go), and
// kernelFirst is set now.
func (u *UDP) fromRing(in *ring.Inbox, rc *udpcall.Rx, hold *transport.Held) (n int, ok, older bool) {
	// Rings found empty leave the doorbell as it is: emptying it (and taking back the pending
	// wake-up) is for a thread about to sleep (settle, rang). Done here, at every gap of a stream, it
	// let the sender ring again at its next datagram: under sockperf UDP throughput 10,000 to
	// 516,000 doorbell system calls in 2 s on each side, and a message rate down by up to half.
	if !in.Pending() {
		u.refresh(in)
		if !in.Pending() {
			return 0, false, false
		}
	}
	u.rxmu.Lock()
	defer u.rxmu.Unlock()
	name, data, err := in.Peek()
	if errors.Is(err, ring.ErrEmpty) {
		in.Refresh()
		name, data, err = in.Peek()
	}
	full := name // with a group's datagram, the group after the source
	var sab [unix.SizeofSockaddrInet6]byte
	for err == nil {
		sa, src, group, mc := mcRecord(name, &sab)
		if !mc {
			break
		}
		// A group's datagram: taken while the socket's joins admit it (it may have left).
		if u.admits(group, src) {
			name = sa
			break
		}
		in.Pop()
		name, data, err = in.Peek()
	}
	if err != nil {
		return 0, false, false
	}
	if u.afterKernel(in) {
		return 0, false, true
	}
	peek := rc.Flags&unix.MSG_PEEK != 0
	if hold != nil && !peek {
		return u.holdRing(in, rc, hold, name, full, data), true, false
	}
	defer func() {
		if !peek {
			in.Pop()
		}
	}()
	if !peek {
		u.countTaken(in, len(data))
	}
	if capture.On() && !peek {
		u.tapRx(full, data, in.PeekSender())
	}
	return rc.Deliver(name, data), true, false
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

package iomux

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	"github.com/goxio/goxio/offload/transport"
)

// ringSocket returns fd's transport when fd is a datagram socket on rings.
func (e *Mux) ringSocket(fd int) transport.Endpoint {
	s := e.host.Socket(fd)
	if s == nil || s.Stream {
		return nil
	}
	return s.Rings()
}

// tcpSocket returns fd's transport when fd is a stream socket on rings.
func (e *Mux) tcpSocket(fd int) transport.Endpoint {
	s := e.host.Socket(fd)
	if s == nil || !s.Stream {
		return nil
	}
	return s.Rings()
}

// ringReady reports whether a datagram socket's rings hold a datagram.
func ringReady(u transport.Ready) bool {
	rev, _ := u.Poll(-1, unix.POLLIN, 0)
	return rev&unix.POLLIN != 0
}

// poll serves poll and ppoll over fds of which some are ring sockets.
func (e *Mux) poll(c *transport.Call) (r int64) {
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			r = -int64(unix.EFAULT)
		}
	}()
	n := int(c.A[1])
	if n < 0 || n > 1<<20 {
		return -int64(unix.EINVAL)
	}
	var ts *unix.Timespec
	if c.A[2] != 0 {
		ts = umem.Timespec(c.A[2])
	}
	fds := umem.Pollfds(c.A[0], n)
	var w waiter
	errno := w.init(e, ts, c.A[4])
	if errno != 0 {
		return -int64(errno)
	}
	if !e.anyRing(fds) {
		// No ring socket: the kernel's poll on the program's own array.
		for {
			k, errno := sysc.Ppoll(c.A[0], n, w.arm(w.remaining()), c.A[3])
			if errno == unix.EINTR && !w.interrupted() {
				continue // the Go runtime's own signal, not the program's
			}
			errno = w.call.Cut(k, errno)
			return result(k, errno)
		}
	}
	return w.pollLoop(fds, c.A[3])
}

// anyRing reports whether a pollfd array names a ring socket that waits for input.
func (e *Mux) anyRing(fds []unix.PollFd) bool {
	for i := range fds {
		if fds[i].Events&unix.POLLIN != 0 && e.ringSocket(int(fds[i].Fd)) != nil {
			return true
		}
		if fds[i].Events&(unix.POLLIN|unix.POLLOUT) != 0 && e.tcpSocket(int(fds[i].Fd)) != nil {
			return true
		}
	}
	return false
}

// pollLoop runs the waiter over a pollfd array (the program's, or the engine's own for select)
// and returns the number of fds with events, or -errno. It polls a copy that also holds the
// ring sockets' doorbells, and writes the revents back.
func (w *waiter) pollLoop(fds []unix.PollFd, mask uintptr) int64 {
	type target struct {
		i, bell int
		u       transport.Endpoint
	}
	var tarr [8]target
	targets := tarr[:0]
	// TCP connections on rings: their readiness is the transport's (Ready.Poll), the
	// kernel fd is polled for what wakes them (KernelEvents).
	type tcpTarget struct {
		i      int
		t      transport.Endpoint
		events int16
	}
	var tcparr [8]tcpTarget
	tcps := tcparr[:0]
	for i := range fds {
		if fds[i].Events&(unix.POLLIN|unix.POLLOUT) != 0 {
			if t := w.e.tcpSocket(int(fds[i].Fd)); t != nil {
				tcps = append(tcps, tcpTarget{i: i, t: t, events: fds[i].Events})
				w.tcps = append(w.tcps, t)
			}
		}
		if fds[i].Events&unix.POLLIN == 0 {
			continue
		}
		if u := w.e.ringSocket(int(fds[i].Fd)); u != nil {
			targets = append(targets, target{i: i, bell: -1, u: u})
			w.socks = append(w.socks, u)
		}
	}
	n := len(fds)
	all := make([]unix.PollFd, n, n+len(targets))
	copy(all, fds)
	belled := false
	// addBells puts into the polled set the doorbells of the targets that have one and are not
	// in it yet: before the first sleep (they are made when somebody first sleeps on a socket),
	// and after each mark as a sleeper, for a socket that opened its inbox meanwhile (a UDP
	// socket opens it at a later call than the send that gave it its port, and publishes it only
	// while nobody sleeps on it without its doorbell). It reports whether it added one.
	addBells := func() bool {
		belled = true
		added := false
		for k := range targets {
			if targets[k].bell >= 0 {
				continue
			}
			if b := targets[k].u.Bell(); b >= 0 {
				all = append(all, unix.PollFd{Fd: int32(b), Events: unix.POLLIN})
				targets[k].bell = len(all) - 1
				added = true
			}
		}
		return added
	}
	// kernelEvents sets what the kernel is asked for on the TCP targets (before each look: a
	// connection switches while we wait).
	kernelEvents := func() {
		for _, t := range tcps {
			all[t.i].Events = t.t.KernelEvents(t.events)
		}
	}
	tcpReady := func() bool {
		for _, t := range tcps {
			if rev, ok := t.t.Poll(int(fds[t.i].Fd), t.events, 0); ok && rev != 0 {
				return true
			}
		}
		return false
	}
	defer w.spin(false)
	defer w.sleep(false)
	fix := func() int64 {
		for _, t := range tcps {
			if rev, ok := t.t.Poll(int(fds[t.i].Fd), t.events, all[t.i].Revents); ok {
				all[t.i].Revents = rev
			}
		}
		for _, t := range targets {
			if t.bell >= 0 && all[t.bell].Revents != 0 {
				t.u.Rang()
			}
			// The transport's answer with the kernel's: the rings' data, and the kernel's
			// input unless it is only copies of what the rings brought (multicast).
			if rev, ok := t.u.Poll(int(fds[t.i].Fd), unix.POLLIN, all[t.i].Revents); ok {
				all[t.i].Revents = rev
			}
		}
		count := int64(0)
		for i := range all[:n] {
			if all[i].Revents != 0 {
				count++
			}
		}
		return count
	}
	done := func(r int64) int64 {
		for i := range fds {
			fds[i].Revents = all[i].Revents
		}
		return r
	}
	zero := unix.Timespec{}
	ringReady := func() bool {
		for _, t := range targets {
			if ringReady(t.u) {
				return true
			}
		}
		return false
	}
	r, errno := wait.Loop(&w.call, w.policy(), wait.Steps{
		Try: func(l wait.Look) (int, syscall.Errno, bool) {
			if !ringReady() && !tcpReady() && !l.Last && !w.osCheckDue(l) {
				return 0, 0, false
			}
			kernelEvents()
			if _, errno := sysc.PpollFds(all, &zero, 0); errno != 0 {
				if errno != unix.EINTR || w.interrupted() {
					return -1, errno, true
				}
				return 0, 0, false // the Go runtime's own signal, not the program's
			}
			if r := fix(); r > 0 || w.deadline < 0 {
				return int(r), 0, true
			}
			return 0, 0, false
		},
		Mark: w.spin,
		Sleep: func() (int, syscall.Errno, bool) {
			if !belled {
				addBells()
				if r := fix(); r > 0 {
					return int(r), 0, true
				}
			}
			w.sleep(true)
			if addBells() || ringReady() || tcpReady() {
				w.sleep(false)
				return 0, 0, false
			}
			kernelEvents()
			sleep, bounded := boundSleep(w.remaining(), w.tcps)
			k, errno := sysc.PpollFds(all, w.arm(sleep), mask)
			w.sleep(false)
			if errno == unix.EINTR && !w.interrupted() {
				return 0, 0, false // the Go runtime's own signal (preemption), not the program's: wait on
			}
			if errno != 0 {
				return -1, errno, true
			}
			if k == 0 && bounded {
				return 0, 0, false // marks of others on our connections: look at the rings again
			}
			if k == 0 && w.interrupted() {
				return 0, 0, false // a handler came just before the sleep (waiter.arm): the loop ends the call
			}
			if k == 0 {
				return 0, 0, true
			}
			if r := fix(); r > 0 {
				return int(r), 0, true
			}
			return 0, 0, false // only a doorbell for data another thread took already: sleep again
		},
	})
	if errno != 0 {
		return -int64(errno)
	}
	return done(int64(r))
}

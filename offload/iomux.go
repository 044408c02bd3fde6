package offload

import (
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
)

// IOMux are the parameters of select, poll and epoll over ring sockets (conf.Params names).
type IOMux struct {
	SelectPoll        int // VMA_SELECT_POLL: microseconds to poll before sleeping; -1 forever
	SelectPollOSRatio int // VMA_SELECT_POLL_OS_RATIO: kernel fds checked every N polls; 0 only at the start
	SelectSkipOS      int // VMA_SELECT_SKIP_OS: with rings ready, check the kernel every N calls only
	// Signals returns the calling thread's signal-handler counters (nil: none): a handler that
	// runs while the call polls ends it with EINTR, as it ends a sleeping select, poll or epoll.
	Signals func() *transport.SigCounters
}

// waiter is one select, poll or epoll_wait call over ring sockets: it polls the rings and the
// kernel, spins for the SelectPoll budget, then sleeps in the kernel, where ring traffic for a
// sleeping socket arrives as a wake datagram on the socket's kernel fd.
type waiter struct {
	e        *Engine
	socks    []transport.Endpoint // the datagram sockets on rings involved
	tcps     []transport.Endpoint // the stream sockets on rings waited for
	spun     []transport.Mark     // the marks taken on tcps while spinning
	setMarks bool                 // an epoll set's awake marks stand for the spin marks on tcps
	deadline int64                // nanotime; 0: none (forever); -1: do not wait
	spinning bool
	sleeping bool // the waiter's ring sockets count it among their sleepers (sleep)
	polls    int  // spinBudget calls, for yielding
	sig      *transport.SigCounters
	sigBase  uint32
}

// init prepares a waiter the caller declared (a value on its stack: a waiter made per call on
// the heap was most of the garbage an event loop made); EINVAL for a bad timeout.
func (w *waiter) init(e *Engine, ts *unix.Timespec, sig uintptr) syscall.Errno {
	*w = waiter{e: e}
	if c := umem.SigCounters(sig); c != nil {
		w.sig = (*transport.SigCounters)(unsafePointer(c))
		w.sigBase = atomic.LoadUint32(&w.sig.All)
	}
	if ts != nil {
		if ts.Sec < 0 || ts.Nsec < 0 || ts.Nsec >= 1e9 {
			return unix.EINVAL
		}
		d := ts.Sec*1e9 + ts.Nsec
		if d == 0 {
			w.deadline = -1
		} else {
			w.deadline = nanotime() + d
		}
	}
	return 0
}

// spinBudget reports whether the waiter may still poll instead of sleeping.
// Past sysc.YieldAfter of polling it gives the CPU away every sysc.YieldEvery polls.
func (w *waiter) spinBudget(start int64) bool {
	p := w.e.cfg.IOMux.SelectPoll
	now := nanotime()
	if w.polls++; w.polls%sysc.YieldEvery == 0 && now-start > sysc.YieldAfter {
		sysc.Yield()
	}
	if p < 0 {
		return w.deadline == 0 || now < w.deadline
	}
	return now-start < int64(p)*1000 && (w.deadline == 0 || now < w.deadline)
}

// interrupted reports whether a signal handler ran on this thread since the waiter started
// spinning.
func (w *waiter) interrupted() bool {
	return w.sig != nil && atomic.LoadUint32(&w.sig.All) != w.sigBase
}

// spin marks the waiter's sockets as polled (senders skip wake datagrams) or not.
func (w *waiter) spin(on bool) {
	if w.spinning == on {
		return
	}
	w.spinning = on
	for _, u := range w.socks {
		u.Spin(on)
	}
	// A TCP connection's writer skips its wake byte while a reader holds a mark on it.
	if on && !w.setMarks {
		for _, t := range w.tcps {
			if m := t.Mark(); m != nil {
				w.spun = append(w.spun, m)
			}
		}
		return
	}
	for _, m := range w.spun {
		m.SpinEnd()
	}
	w.spun = w.spun[:0]
}

// sleep marks the waiter asleep in the kernel on its ring sockets (on, before its last look at
// the rings) or awake again: a thread of ours that stops spinning on one of them with datagrams
// queued then rings its doorbell, since senders skipped the wake-up for the spinner.
func (w *waiter) sleep(on bool) {
	if w.sleeping == on {
		return
	}
	w.sleeping = on
	for _, u := range w.socks {
		u.Sleep(on)
	}
	for _, t := range w.tcps {
		t.Sleep(on)
	}
}

// remaining is the sleep timeout: nil for forever, zero when the deadline passed.
func (w *waiter) remaining() *unix.Timespec {
	if w.deadline == 0 {
		return nil
	}
	left := w.deadline - nanotime()
	if w.deadline < 0 || left < 0 {
		left = 0
	}
	ts := unix.NsecToTimespec(left)
	return &ts
}

// osCheckDue reports whether poll iteration i looks at the kernel fds.
func (w *waiter) osCheckDue(i int) bool {
	r := w.e.cfg.IOMux.SelectPollOSRatio
	return i == 0 || (r > 0 && i%r == 0)
}

// ringSocket returns fd's transport when fd is a datagram socket on rings.
func (e *Engine) ringSocket(fd int) transport.Endpoint {
	s := e.reg.get(fd)
	if s == nil || s.typ != sockDgram {
		return nil
	}
	return s.rings()
}

// tcpSocket returns fd's transport when fd is a stream socket on rings.
func (e *Engine) tcpSocket(fd int) transport.Endpoint {
	s := e.reg.get(fd)
	if s == nil || s.typ != sockStream {
		return nil
	}
	return s.rings()
}

// ringReady reports whether a datagram socket's rings hold a datagram.
func ringReady(u transport.Ready) bool {
	rev, _ := u.Poll(-1, unix.POLLIN, 0)
	return rev&unix.POLLIN != 0
}

// poll serves poll and ppoll over fds of which some are ring sockets.
func (e *Engine) poll(c *transport.Call) (r int64) {
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
			k, errno := ppoll(c.A[0], n, w.remaining(), c.A[3])
			if errno == unix.EINTR && !w.interrupted() {
				continue // the Go runtime's own signal, not the program's
			}
			return result(k, errno)
		}
	}
	return w.pollLoop(fds, c.A[3])
}

// anyRing reports whether a pollfd array names a ring socket that waits for input.
func (e *Engine) anyRing(fds []unix.PollFd) bool {
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
	// addBells puts the doorbells into the polled set, once, before the first sleep (they are
	// made when somebody first sleeps on a socket).
	addBells := func() {
		if belled {
			return
		}
		belled = true
		for k := range targets {
			if b := targets[k].u.Bell(); b >= 0 {
				all = append(all, unix.PollFd{Fd: int32(b), Events: unix.POLLIN})
				targets[k].bell = len(all) - 1
			}
		}
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
			if ringReady(t.u) {
				all[t.i].Revents |= unix.POLLIN
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
	start := nanotime()
	ringReady := func() bool {
		for _, t := range targets {
			if ringReady(t.u) {
				return true
			}
		}
		return false
	}
	for i := 0; ; i++ {
		if ringReady() || tcpReady() || w.osCheckDue(i) {
			kernelEvents()
			if _, errno := ppollGo(all, &zero, 0); errno != 0 {
				if errno != unix.EINTR || w.interrupted() {
					return -int64(errno)
				}
				continue // the Go runtime's own signal, not the program's
			}
			if r := fix(); r > 0 || w.deadline < 0 {
				return done(r)
			}
		}
		if w.interrupted() {
			return -int64(unix.EINTR)
		}
		if w.spinBudget(start) {
			w.spin(true)
			continue
		}
		if w.spinning {
			w.spin(false)
			continue // one more look at the rings and the kernel before sleeping
		}
		if !belled {
			addBells()
			if r := fix(); r > 0 {
				return done(r)
			}
		}
		w.sleep(true)
		if ringReady() || tcpReady() {
			w.sleep(false)
			continue
		}
		kernelEvents()
		sleep, bounded := boundSleep(w.remaining(), w.tcps)
		k, errno := ppollGo(all, sleep, mask)
		w.sleep(false)
		if errno == unix.EINTR && !w.interrupted() {
			continue // the Go runtime's own signal (preemption), not the program's: wait on
		}
		if errno != 0 {
			return -int64(errno)
		}
		if k == 0 && bounded {
			continue // marks of others on our connections: look at the rings again
		}
		if k == 0 {
			return done(0)
		}
		if r := fix(); r > 0 {
			return done(r)
		}
		// Only a doorbell for data another thread took already: sleep again.
	}
}

// sel serves select and pselect over fd sets that include ring sockets: the sets become a pollfd
// array, which pollLoop serves, and the result goes back into the sets.
func (e *Engine) sel(c *transport.Call) (r int64) {
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			r = -int64(unix.EFAULT)
		}
	}()
	nfds := int(int32(c.A[0]))
	if nfds < 0 {
		return -int64(unix.EINVAL)
	}
	if nfds > unix.FD_SETSIZE {
		nfds = unix.FD_SETSIZE
	}
	rs, ws, es := umem.FdSet(c.A[1], nfds), umem.FdSet(c.A[2], nfds), umem.FdSet(c.A[3], nfds)
	args := umem.SelectArgsAt(c.A[4])
	if !e.anyRingSet(rs, nfds) {
		return e.kernelSelect(c, args)
	}
	ts := args.TS
	if args.TV != nil {
		if args.TV.Sec < 0 || args.TV.Usec < 0 {
			return -int64(unix.EINVAL)
		}
		t := unix.NsecToTimespec(args.TV.Sec*1e9 + args.TV.Usec*1000)
		ts = &t
	}
	var w waiter
	errno := w.init(e, ts, args.Sig)
	if errno != 0 {
		return -int64(errno)
	}
	isSet := func(set []uint64, fd int) bool { return set != nil && set[fd/64]&(1<<(fd%64)) != 0 }
	var fds []unix.PollFd
	for fd := 0; fd < nfds; fd++ {
		var ev int16
		if isSet(rs, fd) {
			ev |= unix.POLLIN
		}
		if isSet(ws, fd) {
			ev |= unix.POLLOUT
		}
		if isSet(es, fd) {
			ev |= unix.POLLPRI
		}
		if ev != 0 {
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: ev})
		}
	}
	n := w.pollLoop(fds, args.Mask)
	if args.TV != nil {
		left := w.remaining()
		if left == nil {
			left = &unix.Timespec{}
		}
		args.TV.Sec, args.TV.Usec = left.Sec, left.Nsec/1000
	}
	if n < 0 {
		return n
	}
	for _, p := range fds {
		if p.Revents&unix.POLLNVAL != 0 {
			return -int64(unix.EBADF)
		}
	}
	clearSet := func(set []uint64) {
		for i := range set {
			set[i] = 0
		}
	}
	// The words beyond nfds stay as the program passed them, as the kernel leaves them.
	clearSetTo := func(set []uint64) {
		if set == nil {
			return
		}
		last := set[len(set)-1]
		clearSet(set)
		if nfds%64 != 0 {
			set[len(set)-1] = last &^ (1<<(nfds%64) - 1)
		}
	}
	clearSetTo(rs)
	clearSetTo(ws)
	clearSetTo(es)
	total := int64(0)
	set := func(s []uint64, fd int) {
		s[fd/64] |= 1 << (fd % 64)
		total++
	}
	const in = unix.POLLIN | unix.POLLHUP | unix.POLLERR
	const out = unix.POLLOUT | unix.POLLERR
	for _, p := range fds {
		fd := int(p.Fd)
		if rs != nil && p.Events&unix.POLLIN != 0 && p.Revents&in != 0 {
			set(rs, fd)
		}
		if ws != nil && p.Events&unix.POLLOUT != 0 && p.Revents&out != 0 {
			set(ws, fd)
		}
		if es != nil && p.Events&unix.POLLPRI != 0 && p.Revents&unix.POLLPRI != 0 {
			set(es, fd)
		}
	}
	return total
}

// anyRingSet reports whether a read fd_set names a ring socket.
func (e *Engine) anyRingSet(rs []uint64, nfds int) bool {
	for fd := 0; fd < nfds && rs != nil; fd++ {
		if rs[fd/64]&(1<<(fd%64)) != 0 && (e.ringSocket(fd) != nil || e.tcpSocket(fd) != nil) {
			return true
		}
	}
	return false
}

// kernelSelect is select or pselect made by the kernel on the program's sets: pselect6, whose
// timeout the kernel updates with the time left (written back into select's timeval, as Linux's
// select does; pselect's timespec is the program's const and stays as it was).
func (e *Engine) kernelSelect(c *transport.Call, args *umem.SelectArgs) int64 {
	var ts *unix.Timespec
	if args.TV != nil {
		t := unix.NsecToTimespec(args.TV.Sec*1e9 + args.TV.Usec*1000)
		if args.TV.Sec < 0 || args.TV.Usec < 0 {
			return -int64(unix.EINVAL)
		}
		ts = &t
	} else if args.TS != nil {
		t := *args.TS
		ts = &t
	}
	var base uint32
	sig := (*transport.SigCounters)(nil)
	if c := umem.SigCounters(args.Sig); c != nil {
		sig = (*transport.SigCounters)(unsafePointer(c))
		base = atomic.LoadUint32(&sig.All)
	}
	var n int
	var errno syscall.Errno
	for {
		n, errno = pselect6(int(int32(c.A[0])), c.A[1], c.A[2], c.A[3], ts, args.Mask)
		if errno != unix.EINTR || sig == nil || atomic.LoadUint32(&sig.All) != base {
			break
		}
		// The Go runtime's own signal, not the program's: wait on (ts holds the time left).
	}
	if args.TV != nil && ts != nil {
		args.TV.Sec, args.TV.Usec = ts.Sec, ts.Nsec/1000
	}
	return result(n, errno)
}

package iomux

import (
	"sync"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/internal/wait"
	"github.com/goxio/goxio/offload/transport"
)

// epollSet is the engine's side of a program's epoll fd that has ring sockets in it. The ring
// sockets are registered, with their fd as data, in an inner epoll fd of the engine's (internal,
// invisible to the program), which is itself in the program's set with a tag as data. epoll_wait
// on the program's set reports the ring sockets' ring readiness and the inner set's kernel
// events, with the program's events and data, and its other fds' events from the kernel.
type epollSet struct {
	epfd, inner int
	tag         uint64

	mu      sync.Mutex
	members map[int]*member // by the fd the program registered
	order   []*member       // members in registration order, for round robin
	next    int
	// owner is the thread that waits on the set, -1 once a second one did; awake are the marks
	// a set with one waiting thread keeps on its shared-memory TCP members (epoll_awake.go).
	owner  uintptr      // threadKey of the waiting thread; manyWaiters once a second one waited
	marks  int          // members with an awake mark
	linger []lingerMark // marks of deleted members (epoll_awake.go)
	// ghosts are deleted shared-memory TCP members whose kernel fd is still registered in the
	// inner set (epoll_ghost.go), by fd.
	ghosts map[int]*member
	// gen counts changes of the members and of their EPOLLIN; waitGen is the gen waitTCPs and
	// waitUDP were made at (waitLists).
	gen, waitGen uint64
	waitTCPs     []transport.Endpoint // TCP members waited on for input (never appended to: shared)
	waitUDP      []*member            // UDP members (their ring transport comes with their port)
}

// member is one ring socket in an epoll set, as the program registered it.
type member struct {
	fd       int
	s        *Socket
	events   uint32
	data     uint64
	disabled bool // EPOLLONESHOT fired; re-armed by EPOLL_CTL_MOD
	bell     int  // the doorbell fd registered in the inner set for this member; 0: none
	et       edgeState
	// Shared-memory TCP members (epoll_tcp.go): inner is the events the kernel fd is registered
	// with in the inner set (they change when the connection switches).
	inner uint32
	awake transport.Mark // the member's awake mark (epoll_awake.go); nil: none
}

// edgeState is what an EPOLLET member reported last (EPOLL_CTL_MOD starts it afresh).
type edgeState struct {
	seen    uint64 // the rings' Arrivals (TCP: bytes received) when input was last reported
	outSeen bool   // TCP: writability was reported and not lost since
	hang    uint32 // TCP: the ERR, HUP and RDHUP bits last reported
	end     bool   // TCP: the end of input was reported
}

// epolls maps program epoll fds to their sets.
type epolls struct {
	mu   sync.Mutex
	sets map[int]*epollSet
}

func (e *Mux) epollSetOf(epfd int) *epollSet {
	e.ep.mu.Lock()
	defer e.ep.mu.Unlock()
	return e.ep.sets[epfd]
}

// newEpollSet makes the inner epoll fd of a program epoll fd.
func (e *Mux) newEpollSet(epfd int) (*epollSet, syscall.Errno) {
	if !sysc.IsEpoll(epfd) {
		if !sysc.IsOpen(epfd) {
			return nil, unix.EBADF
		}
		return nil, unix.EINVAL
	}
	fd, errno := sysc.EpollCreate()
	if errno != 0 {
		return nil, errno
	}
	inner := sysc.MoveHigh(fd)
	tag, ok := e.host.Internal(inner)
	if !ok {
		e.host.Forget(inner)
		sysc.Close(inner)
		return nil, unix.ENOSYS
	}
	set := &epollSet{epfd: epfd, inner: inner, tag: tag, members: map[int]*member{}}
	if errno := sysc.EpollCtl(epfd, unix.EPOLL_CTL_ADD, inner, unix.EPOLLIN, set.tag); errno != 0 {
		e.host.Forget(inner)
		sysc.Close(inner)
		return nil, errno
	}
	e.host.Epoll(epfd)
	e.ep.mu.Lock()
	if e.ep.sets == nil {
		e.ep.sets = map[int]*epollSet{}
	}
	e.ep.sets[epfd] = set
	e.ep.mu.Unlock()
	return set, 0
}

// dropEpoll forgets the set of a program epoll fd that was closed.
func (e *Mux) dropEpoll(epfd int) {
	e.ep.mu.Lock()
	set := e.ep.sets[epfd]
	delete(e.ep.sets, epfd)
	e.ep.mu.Unlock()
	if set != nil {
		set.mu.Lock()
		set.releaseAwake()
		set.mu.Unlock()
		e.host.Forget(set.inner)
		sysc.Close(set.inner)
	}
}

// epollSets returns the current epoll sets (each locked on its own by the caller).
func (e *Mux) epollSets() []*epollSet {
	e.ep.mu.Lock()
	defer e.ep.mu.Unlock()
	sets := make([]*epollSet, 0, len(e.ep.sets))
	for _, set := range e.ep.sets {
		sets = append(sets, set)
	}
	return sets
}

// handMembersOver moves a socket that goes to the kernel for good from the inner sets back into
// the program's epoll sets, with the program's events and data: from now on its epoll_ctl calls
// go straight to the kernel.
func (e *Mux) handMembersOver(s *Socket) {
	for _, set := range e.epollSets() {
		set.mu.Lock()
		for fd, m := range set.members {
			if m.s != s {
				continue
			}
			_ = sysc.EpollCtl(set.inner, unix.EPOLL_CTL_DEL, fd, 0, 0)
			if m.bell > 0 {
				_ = sysc.EpollCtl(set.inner, unix.EPOLL_CTL_DEL, m.bell, 0, 0)
			}
			if errno := sysc.EpollCtl(set.epfd, unix.EPOLL_CTL_ADD, fd, m.events, m.data); errno != 0 {
				e.log.Warn("epoll: socket could not move back to the program's set", zap.Int("fd", fd), zap.Error(errno))
			}
			set.remove(fd)
		}
		set.exorciseSocket(s)
		set.mu.Unlock()
	}
}

// dropMember removes a finished socket from every epoll set (the kernel drops a closed file
// from its sets by itself).
func (e *Mux) dropMember(s *Socket) {
	for _, set := range e.epollSets() {
		set.mu.Lock()
		for fd, m := range set.members {
			if m.s == s {
				set.remove(fd)
			}
		}
		if t := s.Rings(); t != nil && s.Stream {
			set.dropLinger(t)
		}
		set.exorciseSocket(s)
		set.mu.Unlock()
	}
}

func (set *epollSet) remove(fd int) {
	if m := set.members[fd]; m != nil {
		m.releaseAwake(set)
	}
	delete(set.members, fd)
	set.gen++
	for i, m := range set.order {
		if m.fd == fd {
			set.order = append(set.order[:i], set.order[i+1:]...)
			break
		}
	}
}

// epollCtlCall serves epoll_ctl for a ring socket.
func (e *Mux) epollCtlCall(c *transport.Call) (r int64) {
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			r = -int64(unix.EFAULT)
		}
	}()
	epfd, op, fd := int(int32(c.A[0])), int(int32(c.A[1])), c.FD
	s := e.host.Socket(fd)
	kernelOnly := s == nil || e.host.Passthrough(fd) || s.Stream && s.Rings() == nil
	if kernelOnly && (s == nil || !e.engineMember(epfd, fd)) {
		// Kernel sockets stay in the program's set: their epoll readiness is the kernel's. One
		// that went to the kernel for good while a member of the engine's set stays a member
		// (offload/forgood.go) until the program deletes it: that delete, and a change of it,
		// are the engine's (the program's set never had it).
		n, errno := sysc.EpollCtlAt(epfd, op, fd, c.A[2])
		return result(n, errno)
	}
	var events uint32
	var data uint64
	if op != unix.EPOLL_CTL_DEL {
		if c.A[2] == 0 {
			return -int64(unix.EFAULT)
		}
		events, data = umem.EpollEvent(umem.EpollEvents(c.A[2], 1), 0)
	}
	if epfd == fd {
		return -int64(unix.EINVAL)
	}
	set := e.epollSetOf(epfd)
	if set == nil {
		if op != unix.EPOLL_CTL_ADD {
			// Never added through the engine: the kernel's answer (ENOENT, or the registration
			// made before the socket became a ring socket).
			n, errno := sysc.EpollCtlAt(epfd, op, fd, c.A[2])
			return result(n, errno)
		}
		var errno syscall.Errno
		if set, errno = e.newEpollSet(epfd); errno != 0 {
			return -int64(errno)
		}
	}
	// A member's doorbell goes into the inner set at once (after the lock is released), so that
	// the program's set becomes readable for ring data even when it is itself polled or nested.
	if op == unix.EPOLL_CTL_ADD && !s.Stream {
		defer set.armBells()
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	m := set.members[fd]
	switch op {
	case unix.EPOLL_CTL_ADD:
		if m != nil {
			return -int64(unix.EEXIST)
		}
		if m = set.revive(fd, s, events, data); m == nil {
			m = &member{fd: fd, s: s, events: events, data: data}
			if errno := sysc.EpollCtl(set.inner, op, fd, m.innerEvents(), uint64(fd)); errno != 0 {
				return -int64(errno)
			}
		}
		set.members[fd] = m
		set.order = append(set.order, m)
		set.gen++
	case unix.EPOLL_CTL_MOD:
		if m == nil {
			n, errno := sysc.EpollCtlAt(epfd, op, fd, c.A[2])
			return result(n, errno)
		}
		if events&unix.EPOLLEXCLUSIVE != 0 || m.events&unix.EPOLLEXCLUSIVE != 0 {
			return -int64(unix.EINVAL)
		}
		if (events^m.events)&unix.EPOLLIN != 0 {
			set.gen++ // the wait lists hold the TCP members waited for input
		}
		m.events, m.data, m.disabled, m.et = events, data, false, edgeState{}
		if want := m.wantInner(); want != m.inner || !s.Stream {
			// A TCP member whose kernel events stay the same (after the switch EPOLLOUT is a
			// kernel EPOLLIN) costs no system call: event loops switch EPOLLOUT on and off
			// around every write.
			if errno := sysc.EpollCtl(set.inner, op, fd, m.innerEvents(), uint64(fd)); errno != 0 {
				return -int64(errno)
			}
		}
	case unix.EPOLL_CTL_DEL:
		if m == nil {
			n, errno := sysc.EpollCtlAt(epfd, op, fd, c.A[2])
			return result(n, errno)
		}
		set.lingerAwake(m)
		set.remove(fd)
		if kernelOnly || !set.haunt(m) {
			_ = sysc.EpollCtl(set.inner, op, fd, 0, 0)
			if m.bell > 0 {
				_ = sysc.EpollCtl(set.inner, op, m.bell, 0, 0)
			}
		}
	default:
		return -int64(unix.EINVAL)
	}
	return 0
}

// engineMember reports whether fd is a member of the engine's set for the program's epfd.
func (e *Mux) engineMember(epfd, fd int) bool {
	set := e.epollSetOf(epfd)
	if set == nil {
		return false
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	return set.members[fd] != nil
}

// epollWaitCall serves epoll_wait, epoll_pwait and epoll_pwait2 on a set with ring sockets.
func (e *Mux) epollWaitCall(c *transport.Call) (r int64) {
	umem.Protect()
	defer func() {
		if umem.Fault(recover()) {
			r = -int64(unix.EFAULT)
		}
	}()
	set := e.epollSetOf(c.FD)
	max := int(int32(c.A[1]))
	var ts *unix.Timespec
	if c.A[2] != 0 {
		ts = umem.Timespec(c.A[2])
	}
	if set == nil {
		var w waiter
		errno := w.init(e, ts, c.A[4])
		if errno != 0 {
			return -int64(errno)
		}
		for {
			n, errno := sysc.EpollWait(c.FD, c.A[0], max, w.arm(w.remaining()), c.A[3])
			if errno == unix.EINTR && !w.interrupted() {
				continue // the Go runtime's own signal, not the program's
			}
			errno = w.call.Cut(n, errno)
			return result(n, errno)
		}
	}
	if max <= 0 || max > 1<<24 {
		return -int64(unix.EINVAL)
	}
	var w waiter
	errno := w.init(e, ts, c.A[4])
	if errno != 0 {
		return -int64(errno)
	}
	out := umem.EpollEvents(c.A[0], max)
	_ = out[len(out)-1] // fault now on a short array, before anything was consumed
	set.mu.Lock()
	w.tcps = set.waitLists()
	for _, m := range set.waitUDP {
		if u := m.s.Rings(); u != nil {
			w.socks = append(w.socks, u)
		}
	}
	keep := len(w.tcps) > 0 && set.waitedBy(threadKey(c.A[4]))
	if keep {
		set.holdAwake()
		w.setMarks = true // the set's marks stand for the waiter's spin marks
	}
	set.mu.Unlock()
	// release gives the set's marks back before a sleep in the kernel (they are taken again
	// after it); it reports whether there were any (then the rings are looked at once more).
	release := func() bool {
		if !keep {
			return false
		}
		set.mu.Lock()
		defer set.mu.Unlock()
		return set.releaseAwake()
	}
	hold := func() {
		if keep {
			set.mu.Lock()
			set.holdAwake()
			set.mu.Unlock()
		}
	}
	defer w.spin(false)
	zero := unix.Timespec{}
	n, errno := wait.Loop(&w.call, w.policy(), wait.Steps{
		Try: func(l wait.Look) (int, syscall.Errno, bool) {
			n := set.ringEvents(out, 0, max)
			if n == 0 && !l.Last && !w.osCheckDue(l) {
				return 0, 0, false
			}
			k, errno := set.kernelEvents(c.A[0], out, n, max, &zero, 0, nil)
			if errno != 0 && n == 0 {
				if errno == unix.EINTR && !w.interrupted() {
					return 0, 0, false // the Go runtime's own signal, not the program's
				}
				return -1, errno, true
			}
			if n += k; n > 0 || w.deadline < 0 {
				return n, 0, true
			}
			return 0, 0, false
		},
		Mark: w.spin,
		Sleep: func() (int, syscall.Errno, bool) {
			if release() {
				return 0, 0, false // one more look at the rings without the marks
			}
			w.sleep(true)  // before the last look at the rings
			set.armBells() // doorbells are made when somebody first sleeps on a socket
			if n := set.ringEvents(out, 0, max); n > 0 {
				w.sleep(false)
				hold()
				return n, 0, true
			}
			sleep, bounded := boundSleep(w.remaining(), w.tcps)
			k, errno := set.kernelEvents(c.A[0], out, 0, max, w.arm(sleep), c.A[3], &w)
			w.sleep(false)
			hold()
			if errno == unix.EINTR && !w.interrupted() {
				return 0, 0, false // the Go runtime's own signal (preemption), not the program's: wait on
			}
			if errno != 0 {
				return -1, errno, true
			}
			if k > 0 {
				return k, 0, true
			}
			if bounded {
				return 0, 0, false // marks of others: look at the rings again
			}
			if left := w.remaining(); left != nil && left.Sec == 0 && left.Nsec == 0 {
				return 0, 0, true
			}
			return 0, 0, false
		},
	})
	if errno != 0 {
		return -int64(errno)
	}
	return int64(n)
}

// waitLists returns the shared-memory TCP members a waiter waits on for input, and makes
// set.waitUDP current; set.mu is held. Both are made again only when the members changed (a TCP
// member has its transport from before it was added: one without is left to the kernel).
func (set *epollSet) waitLists() []transport.Endpoint {
	if set.waitGen == set.gen && set.waitTCPs != nil {
		return set.waitTCPs
	}
	tcps := make([]transport.Endpoint, 0, len(set.order))
	set.waitUDP = set.waitUDP[:0:0]
	for _, m := range set.order {
		if !m.s.Stream {
			set.waitUDP = append(set.waitUDP, m)
		} else if t := m.s.Rings(); t != nil && m.events&unix.EPOLLIN != 0 {
			tcps = append(tcps, t)
		}
	}
	set.waitTCPs, set.waitGen = tcps, set.gen
	return tcps
}

// ringEvents writes the events of members whose rings hold data into out[from:max] and returns
// how many.
func (set *epollSet) ringEvents(out []byte, from, max int) int {
	set.mu.Lock()
	defer set.mu.Unlock()
	n := from
	count := len(set.order)
	for k := 0; k < count && n < max; k++ {
		m := set.order[(set.next+k)%count]
		if m.disabled {
			continue
		}
		if t := m.s.Rings(); t != nil && m.s.Stream {
			if ev, ok := m.tcpEvents(t, 0); ok && ev != 0 {
				umem.PutEpollEvent(out, n, ev, m.data)
				n++
				if m.events&unix.EPOLLONESHOT != 0 {
					m.disabled = true
				}
			}
			continue
		}
		if m.events&unix.EPOLLIN == 0 {
			continue
		}
		u := m.s.Rings()
		if u == nil {
			continue
		}
		if !ringReady(u) {
			continue
		}
		if m.events&unix.EPOLLET != 0 {
			// An edge is a datagram that arrived since the last report.
			a := u.Arrivals(m.fd)
			if a == m.et.seen {
				continue
			}
			m.et.seen = a
		}
		ev := uint32(unix.EPOLLIN)
		if m.events&unix.EPOLLOUT != 0 {
			ev |= unix.EPOLLOUT // a UDP socket can always send
		}
		umem.PutEpollEvent(out, n, ev&m.events|ev&unix.EPOLLIN, m.data)
		n++
		if m.events&unix.EPOLLONESHOT != 0 {
			m.disabled = true
		}
	}
	if count > 0 {
		set.next = (set.next + 1) % count
	}
	return n - from
}

// kernelEvents waits (ts) for the program's set and writes its events into out[from:max]: the
// kernel's own events for the program's other fds, and, for the tag event of the inner set, the
// inner set's events translated to the members' data (wake datagrams dropped; a member already
// reported from its rings gets the kernel's other bits added). A sleeping waiter (w, nil for a
// look that does not sleep) stops counting as a sleeper on its sockets when the kernel returns,
// before the inner events are read: an edge-triggered member empties its doorbell (Quiet) only
// when no other thread sleeps on the socket.
func (set *epollSet) kernelEvents(addr uintptr, out []byte, from, max int, ts *unix.Timespec, mask uintptr, w *waiter) (int, syscall.Errno) {
	k, errno := sysc.EpollWait(set.epfd, addr+uintptr(from*umem.EpollEventSize), max-from, ts, mask)
	if w != nil {
		w.sleep(false)
	}
	if errno != 0 || k <= 0 {
		return 0, errno
	}
	n := from
	inner := false
	for i := from; i < from+k; i++ {
		ev, data := umem.EpollEvent(out, i)
		if data == set.tag {
			inner = true
			continue
		}
		umem.PutEpollEvent(out, n, ev, data)
		n++
	}
	if inner && n < max {
		n += set.innerEvents(out, n, max)
	}
	return n - from, 0
}

// bellData marks a doorbell's registration in an inner set (the member's fd in the low bits).
const bellData = 1 << 62

// innerEvents reads the inner set without waiting and appends the members' events after
// out[:n] (which holds this call's events so far: a member reported from its rings gets the
// kernel's bits added instead).
func (set *epollSet) innerEvents(out []byte, n, max int) int {
	set.mu.Lock()
	regs := 2*len(set.members) + len(set.ghosts) + 1 // each member and its doorbell, ghosts
	set.mu.Unlock()
	lim := min(max-n, regs)
	if lim <= 0 {
		return 0
	}
	var small [64 * 16]byte
	buf := small[:]
	if lim*sysc.EpollEventSize > len(small) {
		buf = make([]byte, lim*sysc.EpollEventSize)
	}
	// One read: the inner set is level-triggered for doorbells, so reading again would return
	// the same registrations.
	k, errno := sysc.EpollWaitNow(set.inner, buf[:lim*sysc.EpollEventSize])
	if errno != 0 || k <= 0 {
		return 0
	}
	return set.translate(out, buf[:k*sysc.EpollEventSize], n)
}

// translate turns inner events into the program's events, written from out[at:].
func (set *epollSet) translate(out, events []byte, at int) int {
	set.mu.Lock()
	defer set.mu.Unlock()
	added := 0
	for i := 0; i+sysc.EpollEventSize <= len(events); i += sysc.EpollEventSize {
		ev, data := sysc.EpollEventAt(events[i:])
		bell := data&bellData != 0
		fd := int(data &^ bellData)
		m := set.members[fd]
		if m == nil {
			if !bell {
				set.exorcise(fd)
			}
			continue
		}
		if t := m.s.Rings(); t != nil && m.s.Stream && !bell {
			// The transport's answer (already within the member's events, ERR and HUP); the
			// kernel's stands for a connection without a segment.
			if tev, ok := m.tcpEvents(t, uint32(ev)); ok {
				ev = tev
			}
		} else if u := m.s.Rings(); u != nil && !bell && !m.s.Stream && ev&unix.EPOLLIN != 0 {
			// The kernel's input may be only copies of multicast datagrams the rings brought
			// (the transport drops them): then the rings answer for EPOLLIN.
			if rev, ok := u.Poll(fd, unix.POLLIN, unix.POLLIN); ok && rev&unix.POLLIN == 0 {
				ev &^= unix.EPOLLIN | unix.EPOLLRDNORM
				if ev&(m.events|unix.EPOLLERR|unix.EPOLLHUP) == 0 && m.events&unix.EPOLLONESHOT != 0 {
					// The inner registration fired (and is disabled) for nothing the
					// program sees: armed again.
					sysc.EpollCtl(set.inner, unix.EPOLL_CTL_MOD, fd, m.inner, uint64(fd))
				}
			}
		} else if bell {
			u := m.s.Rings()
			if u == nil {
				continue
			}
			if m.events&unix.EPOLLET != 0 {
				// Edge-triggered: the doorbell is emptied at once, so the next datagram rings
				// again; it reports data that arrived since the last report only. An arrival
				// this set reports is news for the other sets sleeping on the socket too: the
				// doorbell stays for them (Quiet), and the last to wake empties it.
				news := m.events&unix.EPOLLIN != 0 && u.Arrivals(m.fd) != m.et.seen && ringReady(u)
				u.Quiet(news)
				a := u.Arrivals(m.fd)
				if !ringReady(u) || a == m.et.seen || m.events&unix.EPOLLIN == 0 {
					continue
				}
				m.et.seen = a
			} else {
				u.Rang()
				if !ringReady(u) || m.events&unix.EPOLLIN == 0 {
					continue
				}
			}
			ev = unix.EPOLLIN
		}
		ev &= m.events | unix.EPOLLERR | unix.EPOLLHUP
		if ev == 0 {
			continue
		}
		if j := indexOf(out, 0, at+added, m.data); j >= 0 {
			old, _ := umem.EpollEvent(out, j)
			umem.PutEpollEvent(out, j, old|ev, m.data)
			continue
		}
		if m.disabled {
			continue
		}
		umem.PutEpollEvent(out, at+added, ev, m.data)
		added++
		if m.events&unix.EPOLLONESHOT != 0 {
			m.disabled = true
		}
	}
	return added
}

// armBells registers, in the inner set, the doorbells of members that got one since they were
// added (a socket gets its inbox when it gets a port).
func (set *epollSet) armBells() {
	set.mu.Lock()
	defer set.mu.Unlock()
	for fd, m := range set.members {
		if m.s.Stream {
			if ev := m.wantInner(); ev != m.inner && sysc.EpollCtl(set.inner, unix.EPOLL_CTL_MOD, fd, ev, uint64(fd)) == 0 {
				m.inner = ev
			}
			continue
		}
		u := m.s.Rings()
		if u == nil {
			continue
		}
		if b := u.Bell(); b >= 0 && b != m.bell {
			if sysc.EpollCtl(set.inner, unix.EPOLL_CTL_ADD, b, unix.EPOLLIN, uint64(fd)|bellData) == 0 {
				m.bell = b
			}
		}
	}
}

func indexOf(out []byte, from, to int, data uint64) int {
	for j := from; j < to; j++ {
		if _, d := umem.EpollEvent(out, j); d == data {
			return j
		}
	}
	return -1
}

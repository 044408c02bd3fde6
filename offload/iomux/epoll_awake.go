package iomux

import (
	"github.com/goxio/goxio/offload/internal/sysc"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// Awake marks. A shared-memory TCP writer sends its wake byte (a kernel send) only when no spin
// mark is held on the reader's side of the segment. A single-threaded event loop (redis, nginx
// workers, node) spends much of its time between two epoll_wait calls, running the program:
// it will look at the rings at its next epoll_wait anyway, so a wake byte meanwhile is a wasted
// system call on both ends. So an epoll set waited on by one thread only keeps a mark on every
// shared-memory TCP member from that thread's first epoll_wait until it is about to sleep in the
// kernel, and takes them again when it wakes up: the marks say "this process will look".
//
// Marks held by a set whose thread runs the program (or that nobody waits on any more) must not
// keep wake bytes away from another thread asleep on the same connection (a blocking receive,
// another set): a sleeper registers on the connection's segment before its last look
// (Ready.Sleep), and the peer's writer wakes registered sleepers whatever the marks. A sleeper
// that could not register (it went to sleep before the connection had a segment) and finds marks
// it does not own (Ready.Marked) sleeps at most awakeCheck at a time and looks at the rings again
// in between.

// awakeCheck bounds one sleep of an unregistered waiter while marks of others are held.
const awakeCheck = 1e6 // ns

// A member deleted from the set (EPOLL_CTL_DEL) keeps its mark while the set does (lingering):
// event loops delete and add a connection around every request (redis-benchmark's ae does);
// a mark given back at each delete would have the peer send a wake byte per request. The mark
// is the member's again when it is added back, and goes with the others when the set sleeps,
// and at once when the socket closes.

// lingerMark is the mark of a deleted member.
type lingerMark struct {
	t transport.Endpoint
	c transport.Mark
}

// lingerAwake keeps m's mark after m leaves the set (EPOLL_CTL_DEL). set.mu is held.
func (set *epollSet) lingerAwake(m *member) {
	t := m.s.Rings()
	if m.awake == nil || t == nil {
		return
	}
	set.linger = append(set.linger, lingerMark{t: t, c: m.awake})
	m.awake = nil
	set.marks--
}

// adoptLinger gives back to t the mark it left when it was deleted; false: none. set.mu is
// held.
func (set *epollSet) adoptLinger(t transport.Endpoint) (transport.Mark, bool) {
	for i, l := range set.linger {
		if l.t == t {
			set.linger = append(set.linger[:i], set.linger[i+1:]...)
			return l.c, true
		}
	}
	return nil, false
}

// dropLinger releases t's lingering mark (its socket closes). set.mu is held.
func (set *epollSet) dropLinger(t transport.Endpoint) {
	if c, ok := set.adoptLinger(t); ok {
		c.SpinEnd()
	}
}

// waitedBy records that thread (a threadKey) waits on the set; it reports whether the set keeps
// awake marks (one waiting thread so far). set.mu is held.
func (set *epollSet) waitedBy(thread uintptr) bool {
	switch set.owner {
	case 0:
		set.owner = thread
	case thread:
	default:
		set.owner = manyWaiters
		set.releaseAwake()
	}
	return set.owner == thread
}

// manyWaiters is a set's owner once more than one thread waited on it.
const manyWaiters = ^uintptr(0)

// threadKey identifies the calling thread without a system call: the address of its signal
// counters (shim/signal.c, in the thread's TLS), which the trampoline passes with every wait;
// its thread id when there are none.
func threadKey(sigCounters uintptr) uintptr {
	if sigCounters != 0 {
		return sigCounters
	}
	return uintptr(sysc.Gettid())
}

// holdAwake marks every shared-memory TCP member read from the ring that has no mark yet.
// set.mu is held.
func (set *epollSet) holdAwake() {
	if set.marks == len(set.members) {
		return // every member is marked
	}
	for _, m := range set.members {
		if m.awake != nil || m.events&unix.EPOLLIN == 0 {
			continue
		}
		t := m.s.Rings()
		if t == nil || !m.s.Stream {
			continue
		}
		if c, ok := set.adoptLinger(t); ok {
			m.awake = c
			set.marks++
			continue
		}
		if c := t.Mark(); c != nil {
			m.awake = c
			set.marks++
		}
	}
}

// releaseAwake gives every mark of the set back; it reports whether there were any. set.mu
// is held.
func (set *epollSet) releaseAwake() bool {
	if set.marks == 0 && len(set.linger) == 0 {
		return false
	}
	for _, m := range set.members {
		m.releaseAwake(set)
	}
	for _, l := range set.linger {
		l.c.SpinEnd()
	}
	set.linger = set.linger[:0]
	return true
}

// releaseAwake gives back the member's mark, if it has one (it leaves the set, or its set
// sleeps). set.mu is held.
func (m *member) releaseAwake(set *epollSet) {
	if m.awake != nil {
		m.awake.SpinEnd()
		m.awake = nil
		set.marks--
	}
}

// othersAwake reports whether marks are held on a connection of tcps that the caller does not
// hold itself (it gave its own back): a writer then skips the wake byte the caller would sleep
// for.
func othersAwake(tcps []transport.Endpoint) bool {
	for _, t := range tcps {
		if t.Marked() {
			return true
		}
	}
	return false
}

// boundSleep is the sleep timeout of a waiter: ts, or at most awakeCheck while others hold
// marks on its connections (bounded reports that).
func boundSleep(ts *unix.Timespec, tcps []transport.Endpoint) (out *unix.Timespec, bounded bool) {
	if !othersAwake(tcps) {
		return ts, false
	}
	if ts != nil && ts.Nano() <= awakeCheck {
		return ts, false
	}
	b := unix.NsecToTimespec(awakeCheck)
	return &b, true
}

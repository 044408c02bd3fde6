package iomux

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// Shared-memory TCP connections in an epoll set: the connection's kernel fd sits in the inner
// set with the events the transport says wake it (Ready.KernelEvents; for shared-memory TCP after our switch the
// ring's space comes back as a wake byte, a kernel POLLIN, since the kernel's POLLOUT is then
// always set), level-triggered; the events reported to the program are the transport's answer
// (Ready.Poll), so a wake byte left after its data was read reports nothing, and EPOLLOUT
// follows the ring. EPOLLET is emulated: EPOLLIN is reported again only when more bytes arrived
// since the last report, EPOLLOUT only after the connection was not writable in between, and a
// report carries every ready event, as the kernel's does. The inner registration stays
// level-triggered for an edge-triggered member too: at most one data wake byte is in flight per
// direction (shm/wake.go), so while one sits unread an edge-triggered registration would not
// wake a sleeper for the next ring data. The cost: a wait on a set whose edge-triggered member
// has unread input that is no news looks again instead of sleeping for good.

// epollPollBits are the epoll bits that are poll bits of the same value.
const epollPollBits = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLPRI | unix.EPOLLERR | unix.EPOLLHUP | unix.EPOLLRDHUP

// innerEvents are the events m's kernel fd is registered with in the inner set; the caller
// registers them (m.inner records them).
func (m *member) innerEvents() uint32 {
	m.inner = m.wantInner()
	return m.inner
}

// wantInner are the events m's kernel fd should be registered with in the inner set now (they
// change when the connection switches).
func (m *member) wantInner() uint32 {
	if !m.s.Stream {
		return m.events
	}
	want := m.events & epollPollBits
	if t := m.s.Rings(); t != nil {
		want = uint32(uint16(t.KernelEvents(int16(want)))) | m.events&^epollPollBits&^(unix.EPOLLET|unix.EPOLLONESHOT)
	}
	return want
}

// tcpEvents is what m reports for the kernel's events kernel (0 for a look at the rings only);
// ok false when the kernel's answer stands (the connection has no segment) and, for a look at the
// rings only, when there is nothing to say.
func (m *member) tcpEvents(t transport.Endpoint, kernel uint32) (uint32, bool) {
	want := int16(m.events & epollPollBits)
	rev, ok := t.Poll(m.fd, want, int16(kernel&epollPollBits))
	if !ok && (kernel == 0 || m.events&unix.EPOLLET == 0) {
		return kernel, false
	}
	// Without a segment the kernel's answer is the truth, and an edge-triggered member still
	// reports its edges only.
	ev := uint32(uint16(rev)) & (m.events | unix.EPOLLERR | unix.EPOLLHUP)
	if m.events&unix.EPOLLET != 0 {
		ev = m.edges(t, ev, kernel != 0)
	}
	return ev, true
}

// edges filters an edge-triggered member's ready events ev. The kernel reports, at each wake-up
// of the file, every event that is ready then: an edge is bytes that arrived since the last
// report, the end of input (a FIN), writability that was lost in between, or a hang-up or error
// bit that was not reported yet; without one nothing is reported. full says the look had the
// kernel's answer; a look at the rings alone does not know the kernel's bits (before our switch
// writability is the kernel's, before the reader's switch input is), so an event missing from it
// is not an event lost: only what the look knows is taken as gone.
func (m *member) edges(t transport.Endpoint, ev uint32, full bool) uint32 {
	edge := false
	if ev&unix.EPOLLIN != 0 {
		if a := t.Arrivals(m.fd); a != m.et.seen {
			m.et.seen = a
			edge = true
		}
		if !m.et.end && t.Ended() {
			m.et.end = true
			edge = true
		}
	}
	if ev&unix.EPOLLOUT != 0 {
		edge = edge || !m.et.outSeen
		m.et.outSeen = true
	} else if full || t.KernelEvents(unix.POLLOUT)&unix.POLLOUT == 0 {
		m.et.outSeen = false // writability is the ring's after our switch: known without the kernel
	}
	const hangs = unix.EPOLLERR | unix.EPOLLHUP | unix.EPOLLRDHUP
	if ev&hangs&^m.et.hang != 0 {
		edge = true
	}
	if full {
		m.et.hang = ev & hangs
	} else {
		m.et.hang |= ev & hangs
	}
	if !edge {
		return 0
	}
	return ev
}

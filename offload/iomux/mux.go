// Package iomux serves select, poll and epoll for programs whose sockets are partly served by
// transports other than the kernel's: a socket is ready when its transport says so
// (transport.Ready) or its kernel socket is, and a call that waits polls the transports within
// the polling budget (VMA_SELECT_POLL) and then sleeps in the kernel on the sockets' kernel fds
// and doorbells. It knows sockets only as Socket handles and transports only through the
// contract in offload/transport; the engine (Host) maps fds to sockets and keeps the C-side fd
// table.
package iomux

import (
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"

	"github.com/goxio/goxio/offload/transport"
)

// Params are the parameters of select, poll and epoll over ring sockets (conf.Params names).
type Params struct {
	SelectPoll        int // VMA_SELECT_POLL: microseconds to poll before sleeping; -1 forever
	SelectPollOSRatio int // VMA_SELECT_POLL_OS_RATIO: kernel fds checked every N polls; 0 only at the start
	SelectSkipOS      int // VMA_SELECT_SKIP_OS: with rings ready, check the kernel every N calls only
	// Signals returns the calling thread's signal-handler counters (nil: none): a handler that
	// runs while the call polls ends it with EINTR, as it ends a sleeping select, poll or epoll.
	Signals func() *transport.SigCounters
}

// Socket is the part of an engine socket select, poll and epoll read; its address identifies the
// socket (several fds may refer to it). The engine sets Stream at creation and the transport
// with SetRings.
type Socket struct {
	// Stream: a SOCK_STREAM socket (else SOCK_DGRAM); fixed at creation.
	Stream bool
	ring   atomic.Pointer[ringRef]
}

// ringRef holds a socket's transport for Socket.ring.
type ringRef struct{ transport.Endpoint }

// SetRings records the socket's transport, one other than the kernel's (it never changes after).
func (s *Socket) SetRings(t transport.Endpoint) { s.ring.Store(&ringRef{t}) }

// Rings is the socket's transport when it is not the kernel's (a transport that gave up stays
// the socket's: its queued data is still read), or nil. Lock-free: readiness checks of epoll
// sets look at every member while they poll.
func (s *Socket) Rings() transport.Endpoint {
	if r := s.ring.Load(); r != nil {
		return r.Endpoint
	}
	return nil
}

// Host is what the package asks of the engine.
type Host interface {
	// Socket is the socket behind fd, or nil when fd is not one of the engine's sockets.
	Socket(fd int) *Socket
	// Passthrough reports whether fd's socket was handed to the kernel for good (its epoll
	// registrations are then the kernel's).
	Passthrough(fd int) bool
	// Internal marks fd as the library's own in the C-side table (invisible to the program) and
	// returns the tag the table gives it (the data of its registration in the program's epoll
	// set); false: the table cannot tag fds.
	Internal(fd int) (tag uint64, ok bool)
	// Epoll marks a program epoll fd as one with ring sockets (epoll_wait enters the engine).
	Epoll(epfd int)
	// Forget clears fd in the C-side table.
	Forget(fd int)
}

// Mux serves select, poll and epoll for one process.
type Mux struct {
	p    Params
	host Host
	log  *zap.Logger
	ep   epolls
}

// New returns a Mux for the host's sockets; log nil: no logging.
func New(p Params, host Host, log *zap.Logger) *Mux {
	if log == nil {
		log = zap.NewNop()
	}
	return &Mux{p: p, host: host, log: log}
}

// Poll serves poll and ppoll (transport.OpPoll).
func (e *Mux) Poll(c *transport.Call) int64 { return e.poll(c) }

// Select serves select and pselect (transport.OpSelect).
func (e *Mux) Select(c *transport.Call) int64 { return e.sel(c) }

// EpollCtl serves epoll_ctl on a socket of the engine's (transport.OpEpollCtl).
func (e *Mux) EpollCtl(c *transport.Call) int64 { return e.epollCtlCall(c) }

// EpollWait serves epoll_wait, epoll_pwait and epoll_pwait2 (transport.OpEpollWait).
func (e *Mux) EpollWait(c *transport.Call) int64 { return e.epollWaitCall(c) }

// ClosedEpoll forgets the epoll set of an epoll fd the program closed or replaced.
func (e *Mux) ClosedEpoll(epfd int) { e.dropEpoll(epfd) }

// ClosingStream forgets the ghost registrations (epoll_ghost.go) of fd, a stream socket's fd on
// rings about to be closed or replaced.
func (e *Mux) ClosingStream(fd int) { e.dropGhosts(fd) }

// HandOver moves a socket that goes to the kernel for good from the engine's epoll sets back into
// the program's.
func (e *Mux) HandOver(s *Socket) { e.handMembersOver(s) }

// Finished removes a socket whose last fd was closed from every epoll set.
func (e *Mux) Finished(s *Socket) { e.dropMember(s) }

func result(n int, e syscall.Errno) int64 {
	if e != 0 {
		return -int64(e)
	}
	return int64(n)
}

// Member reports whether s is registered in one of the engine's epoll sets (a member of its
// inner set): the engine then keeps answering epoll_ctl and epoll_wait for it, and select and
// poll, so that the set's edge-triggered state stays exact, when the socket's data calls go to
// the kernel for good (offload/forgood.go).
func (e *Mux) Member(s *Socket) bool {
	for _, set := range e.epollSets() {
		set.mu.Lock()
		found := false
		for _, m := range set.members {
			if m.s == s {
				found = true
				break
			}
		}
		set.mu.Unlock()
		if found {
			return true
		}
	}
	return false
}

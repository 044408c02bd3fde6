package iomux

import (
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// Ghost members. Event loops delete a connection from their epoll set and add it back around
// every request (redis-benchmark's ae: EPOLL_CTL_DEL when no event is wanted, EPOLL_CTL_ADD for
// the next one), and for a shared-memory TCP member each of those was an epoll_ctl system call
// on the inner set, half of such a client's time. So EPOLL_CTL_DEL of a shared-memory TCP member
// only forgets it in the engine and leaves its kernel fd registered in the inner set, as a
// ghost; adding it back takes the registration over without a system call.
//
// A ghost reports nothing to the program. Its registration is really deleted:
//   - when the kernel reports an event for it (a level-triggered registration would keep the
//     inner set readable, so waiting on the program's set would never sleep);
//   - when its fd is closed or replaced (Engine.forget, before the kernel closes the fd: once
//     the number refers to another file, the old registration could no longer be named);
//   - when its socket goes to the kernel for good or finishes.

// haunt keeps m's inner registration as a ghost after the program deleted m (set.mu held); false
// when m is not a shared-memory TCP member (the caller deletes the registration).
func (set *epollSet) haunt(m *member) bool {
	if !m.s.Stream || m.s.Rings() == nil || m.bell > 0 {
		return false
	}
	if set.ghosts == nil {
		set.ghosts = map[int]*member{}
	}
	set.ghosts[m.fd] = m
	return true
}

// revive turns the ghost of fd back into a member with the program's new events and data (set.mu
// held), changing its inner registration only when its kernel events differ; nil when fd has no
// ghost of s.
func (set *epollSet) revive(fd int, s *Socket, events uint32, data uint64) *member {
	m := set.ghosts[fd]
	if m == nil {
		return nil
	}
	delete(set.ghosts, fd)
	if m.s != s {
		// Cannot happen (forget drops the ghosts of a closing fd): deleting by number would
		// name the new file, so only the bookkeeping goes.
		return nil
	}
	registered := m.inner
	*m = member{fd: fd, s: s, events: events, data: data}
	if want := m.innerEvents(); want != registered {
		if sysc.EpollCtl(set.inner, unix.EPOLL_CTL_MOD, fd, want, uint64(fd)) != 0 {
			// The registration is gone (it cannot be while the fd is open): add it anew.
			_ = sysc.EpollCtl(set.inner, unix.EPOLL_CTL_DEL, fd, 0, 0)
			if sysc.EpollCtl(set.inner, unix.EPOLL_CTL_ADD, fd, want, uint64(fd)) != 0 {
				return nil
			}
		}
	}
	return m
}

// exorcise deletes the ghost of fd, if it has one, from the inner set (set.mu held).
func (set *epollSet) exorcise(fd int) {
	if _, ok := set.ghosts[fd]; ok {
		_ = sysc.EpollCtl(set.inner, unix.EPOLL_CTL_DEL, fd, 0, 0)
		delete(set.ghosts, fd)
	}
}

// exorciseSocket deletes every ghost of s (set.mu held).
func (set *epollSet) exorciseSocket(s *Socket) {
	for fd, m := range set.ghosts {
		if m.s == s {
			set.exorcise(fd)
		}
	}
}

// dropGhosts deletes the ghosts of fd in every set: fd is about to be closed or replaced.
func (e *Mux) dropGhosts(fd int) {
	for _, set := range e.epollSets() {
		set.mu.Lock()
		set.exorcise(fd)
		set.mu.Unlock()
	}
}

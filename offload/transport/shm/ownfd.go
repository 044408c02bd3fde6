package shm

import "github.com/goxio/goxio/offload/internal/sysc"

// A blocking receive sleeps on its own reference to the socket, as the kernel's receive holds its
// file: another thread closing the program's fd does not end the wait, and a number the program
// reuses meanwhile is never waited on. udpcall.OwnFD makes that reference per call (a dup and a
// close, two system calls per sleep); here the socket keeps one for its life instead, made at its
// first sleep, internal (invisible to the program), closed when the socket is released (the last
// call out of a closed socket: a receive asleep on it still has it), and before a fork when no
// receive is asleep on it, so that a forked child does not inherit it (it would keep the port
// bound after the child closed its copy of the socket). A receive asleep during a fork leaves it
// to the child, as the per-call reference did.

// ownRef is the socket's own reference; guarded by UDP.bellMu.
type ownRef struct {
	fd    int // -1: none
	users int // receives asleep on it
}

// takeOwn returns the socket's own reference (made now when there is none), counted as used
// until putOwn; -1 when no descriptor is free (the caller sleeps on the program's fd).
func (u *UDP) takeOwn(fd int) int {
	u.bellMu.Lock()
	defer u.bellMu.Unlock()
	if u.own.fd < 0 {
		// Made where the engine keeps its internal fds at once: adopt then only marks it.
		k, err := sysc.DupHigh(fd)
		if err != nil {
			return -1
		}
		u.own.fd = u.env.adopt(k)
	}
	u.own.users++
	return u.own.fd
}

// putOwn ends a use of the own reference that takeOwn returned.
func (u *UDP) putOwn() {
	u.bellMu.Lock()
	u.own.users--
	u.bellMu.Unlock()
}

// dropOwn closes the own reference: at release (all: nobody can be using it), or before a fork
// when no receive sleeps on it.
func (u *UDP) dropOwn(all bool) {
	u.bellMu.Lock()
	defer u.bellMu.Unlock()
	if u.own.fd < 0 || (!all && u.own.users > 0) {
		return
	}
	u.env.closeFD(u.own.fd)
	u.own.fd = -1
}

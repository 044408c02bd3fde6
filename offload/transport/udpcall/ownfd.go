package udpcall

import (
	"sync"

	"github.com/goxio/goxio/offload/internal/sysc"
	"github.com/goxio/goxio/offload/transport"
)

// OwnRef is a socket's own reference to itself for its blocking receives, as the kernel's receive
// holds its file: another thread closing the program's fd does not end the wait, and a number
// the program reuses meanwhile is never waited on. The socket keeps one for its life, made at
// its first sleep where the engine keeps its internal fds (sysc.DupHigh, then adopted: invisible
// to the program), closed when the socket is released (the last call out of a closed socket: a
// receive asleep on it still has it), and before a fork when no receive is asleep on it, so that
// a forked child does not inherit it (it would keep the port bound after the child closed its
// copy of the socket). A receive asleep during a fork leaves it to the child. One per socket
// instead of one per sleep: no dup and close each time a receive sleeps. The zero value holds
// none.
type OwnRef struct {
	mu    sync.Mutex
	fd    int // 0: none (the reference is placed high, never at 0)
	users int // receives asleep on it
}

// Take has the call c sleep on the socket's reference, made now from c.FD when there is none
// (adopt marks it internal and returns its number): c.FD becomes it, and the call must Put it
// when it ends. false: no descriptor was free, c keeps the program's fd.
func (o *OwnRef) Take(c *transport.Call, adopt func(fd int) int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fd == 0 {
		k, err := sysc.DupHigh(c.FD)
		if err != nil {
			return false
		}
		o.fd = adopt(k)
	}
	o.users++
	c.FD = o.fd
	return true
}

// Put ends a use that Take began.
func (o *OwnRef) Put() {
	o.mu.Lock()
	o.users--
	o.mu.Unlock()
}

// OwnUse is one blocking call's use of its socket's OwnRef: taken at its first sleep, given back
// when the call ends. The zero value has none.
type OwnUse struct{ taken bool }

// Take has c sleep on o from now on (OwnRef.Take), once per call.
func (u *OwnUse) Take(o *OwnRef, c *transport.Call, adopt func(fd int) int) {
	if !u.taken {
		u.taken = o.Take(c, adopt)
	}
}

// End gives o back when the call took it (deferred by the call).
func (u *OwnUse) End(o *OwnRef) {
	if u.taken {
		o.Put()
		u.taken = false
	}
}

// Drop hands the reference to closeFD: at the socket's release (all: nobody can be using it), or
// before a fork when no receive sleeps on it.
func (o *OwnRef) Drop(all bool, closeFD func(fd int)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fd == 0 || (!all && o.users > 0) {
		return
	}
	closeFD(o.fd)
	o.fd = 0
}

package transport

import (
	"sync"
	"sync/atomic"
)

// Users counts the calls inside a transport's socket so that what they use (rings, a queue, the
// fds of its doorbell) is released only once the socket is closed and the last of them has
// returned: a thread may be inside recv while another closes the fd. The zero value is an open
// socket with no call inside.
type Users struct {
	n    atomic.Int64
	shut atomic.Bool
	once sync.Once
}

// Enter marks a call using the socket; false when the socket is closed (the call must not use
// it). A false Enter needs no Exit.
func (u *Users) Enter(release func()) bool {
	u.n.Add(1)
	if u.shut.Load() {
		u.Exit(release)
		return false
	}
	return true
}

// Exit ends a call; the last one out of a closed socket runs release (once for the socket).
func (u *Users) Exit(release func()) {
	if u.n.Add(-1) == 0 && u.shut.Load() {
		u.once.Do(release)
	}
}

// Close marks the socket closed: release runs now when no call is inside, else when the last
// one exits.
func (u *Users) Close(release func()) {
	u.shut.Store(true)
	if u.n.Load() == 0 {
		u.once.Do(release)
	}
}

// Closed reports whether Close happened.
func (u *Users) Closed() bool { return u.shut.Load() }

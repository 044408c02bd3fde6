package shm


// RingReady reports whether the socket's rings hold a datagram (select, poll and epoll report
// the socket readable then, whatever the kernel says).
func (u *UDP) RingReady() bool {
	if !u.enter() {
		return false
	}
	defer u.exit()
	in := u.inbox.Load()
	if in == nil || u.kernelOnly.Load() {
		return false
	}
	if in.Pending() {
		return true
	}
	in.Refresh()
	return in.Pending()
}

// Spin marks (on) or unmarks a thread polling the socket's rings in select, poll or epoll:
// senders skip the wake datagram while somebody polls. Every Spin(true) is followed by one
// Spin(false).
func (u *UDP) Spin(on bool) {
	if !u.enter() {
		return
	}
	defer u.exit()
	in := u.inbox.Load()
	if in == nil {
		return
	}
	if on {
		in.SpinBegin()
	} else {
		in.SpinEnd()
	}
}

// Bell is the socket's doorbell fd (select, poll and epoll sleep on it too), or -1.
func (u *UDP) Bell() int {
	if u.inbox.Load() == nil || u.kernelOnly.Load() {
		return -1
	}
	return u.bell
}

// Rang empties the socket's doorbell after a sleeping select, poll or epoll saw it ring.
func (u *UDP) Rang() {
	if !u.enter() {
		return
	}
	defer u.exit()
	if in := u.inbox.Load(); in != nil {
		drainBell(u.bell)
		in.ClearWake()
	}
}

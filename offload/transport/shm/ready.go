package shm

import "golang.org/x/sys/unix"

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

// KernelReadable is called when the kernel reports the socket readable: it drops wake datagrams
// at the head of the kernel queue and reports whether a real datagram (or a pending error) is
// left, or the rings got data meanwhile.
func (u *UDP) KernelReadable(fd int) bool {
	if !u.enter() {
		return true
	}
	defer u.exit()
	in := u.inbox.Load()
	if in == nil || u.kernelOnly.Load() {
		return true
	}
	for i := 0; i < 64; i++ {
		var head [wakeLen]byte
		l, e := recvRaw(fd, &head, unix.MSG_PEEK|unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		if e == unix.EAGAIN {
			return in.Pending()
		}
		if e != 0 || l != wakeLen || !isWake(head[:], in.Token()) {
			return true
		}
		_, _ = recvRaw(fd, &head, unix.MSG_DONTWAIT)
		in.ClearWake()
		if in.Pending() {
			return true
		}
	}
	return true
}

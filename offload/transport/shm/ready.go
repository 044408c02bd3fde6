package shm

import ring "github.com/goxio/goxio/offload/shm"

// RingReady reports whether the socket's rings hold a datagram (select, poll and epoll report
// the socket readable then, whatever the kernel says).
func (u *UDP) RingReady() bool {
	if !u.enter() {
		return false
	}
	defer u.exit()
	if u.spill.Left() {
		return true
	}
	in := u.inbox.Load()
	if in == nil || u.kernelOnly.Load() {
		return false
	}
	if in.Pending() {
		return true
	}
	u.refresh(in)
	return in.Pending()
}

// refresh brings the inbox's rings up to date (Inbox.Refresh) when they changed, under the
// receive lock (one consumer of the inbox at a time): the receive and readiness paths call it
// without the lock when they find the rings empty.
func (u *UDP) refresh(in *ring.Inbox) {
	if in.Stale() {
		u.rxmu.Lock()
		in.Refresh()
		u.rxmu.Unlock()
	}
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
		u.wakeSleepers(in)
	}
}

// Sleep marks (on) or unmarks a thread of this process asleep in the kernel waiting for the
// socket (select, poll, epoll_wait); mark before the last look at the rings. Every Sleep(true)
// is followed by one Sleep(false). Marking settles the doorbell first.
func (u *UDP) Sleep(on bool) {
	if on {
		if u.enter() {
			if in := u.inbox.Load(); in != nil {
				u.settle(in)
			}
			u.exit()
		}
		u.sleepers.Add(1)
	} else {
		u.sleepers.Add(-1)
	}
}

// wakeSleepers rings the socket's own doorbell when a thread that polled the rings stops with
// datagrams queued while other threads of ours sleep on the socket (in the engine, or in the
// preload library's wait of a kernel read: Inbox.KernelSleepers): a sender saw the spinner and
// sent no wake-up, and the kernel would have woken every waiter (both a poll and an epoll_wait
// on one socket report it readable). A sleeper marks itself before its last look at the rings,
// so either it sees the datagram or we see it.
func (u *UDP) wakeSleepers(in *ring.Inbox) {
	if (u.sleepers.Load() == 0 && in.KernelSleepers() <= 0) || !in.Pending() {
		return
	}
	if r := u.env.ringerFD(); r >= 0 {
		ringBell(r, newBellAddr(in.Name()))
	}
}

// Bell is the socket's doorbell fd (select, poll and epoll sleep on it too), made on first use;
// -1 for a socket without rings.
func (u *UDP) Bell() int {
	if !u.enter() {
		return -1
	}
	defer u.exit()
	in := u.inbox.Load()
	if in == nil || u.kernelOnly.Load() {
		return -1
	}
	return u.ensureBell(in)
}

// Rang is called when a select, poll or epoll saw the socket's doorbell ring: the doorbell is
// emptied once the rings are (rang).
func (u *UDP) Rang() {
	if !u.enter() {
		return
	}
	defer u.exit()
	if in := u.inbox.Load(); in != nil {
		u.rang(in)
	}
}

// rang empties a doorbell a sleeper saw readable once the rings are empty, and takes the
// pending wake-up back (senders ring again). The doorbell stays readable while ring data it
// announced is unread, so every thread sleeping on it (several pollers, an epoll set) sees it;
// the first one to find the rings empty empties it. It empties it even when no wake-up is
// pending: a byte can arrive after another thread took the wake-up back, and a doorbell left
// readable would turn every later sleep into a busy loop.
func (u *UDP) rang(in *ring.Inbox) {
	b := u.bell.Load()
	if b < 0 || in.Pending() {
		return
	}
	drainBell(int(b))
	if in.WakePending() && !in.Pending() {
		in.ClearWake()
	}
}

// settle takes back a pending wake-up, emptying the doorbell, when the rings are empty; a thread
// about to sleep calls it before its last look at the rings (the wake protocol: ClearWake, then
// Pending). Without it a wake-up taken back by nobody would leave wakePending set with an empty
// doorbell (rang empties it but keeps the flag when data arrived meanwhile), senders would not
// ring, and the sleep would not end.
func (u *UDP) settle(in *ring.Inbox) {
	b := u.bell.Load()
	if b < 0 || !in.WakePending() || in.Pending() {
		return
	}
	drainBell(int(b))
	in.ClearWake()
}

// NextSize is the size of the datagram the next receive returns from the rings (FIONREAD); false
// when the rings are empty (the kernel socket then answers).
func (u *UDP) NextSize() (int, bool) {
	if !u.enter() {
		return 0, false
	}
	defer u.exit()
	in := u.inbox.Load()
	if in == nil || u.kernelOnly.Load() {
		return 0, false
	}
	u.rxmu.Lock()
	defer u.rxmu.Unlock()
	_, data, err := in.Peek()
	if err != nil {
		in.Refresh()
		if _, data, err = in.Peek(); err != nil {
			return 0, false
		}
	}
	return len(data), true
}

// Quiet empties the doorbell even though ring data is unread: an edge-triggered epoll member
// already reported that data, and the next datagram rings again (a new edge). With news, not
// while another thread of ours sleeps on the socket (another epoll set, a poll, a receive waiting
// in the preload library: Inbox.KernelSleepers): the kernel wakes every waiter for an arrival,
// and an emptied doorbell would let the one that has not looked yet sleep on (the contract's
// Quiet).
func (u *UDP) Quiet(news bool) {
	if news && u.sleepers.Load() > 0 {
		return
	}
	if !u.enter() {
		return
	}
	defer u.exit()
	if in := u.inbox.Load(); in != nil && in.WakePending() && u.bell.Load() >= 0 && !(news && in.KernelSleepers() > 0) {
		drainBell(int(u.bell.Load()))
		in.ClearWake()
	}
}

// Arrivals grows with every datagram that arrives in the socket's rings (edge-triggered epoll).
func (u *UDP) Arrivals(int) uint64 {
	if !u.enter() {
		return 0
	}
	defer u.exit()
	if in := u.inbox.Load(); in != nil {
		return in.Arrivals()
	}
	return 0
}

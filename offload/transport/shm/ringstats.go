package shm

import (
	"strconv"

	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/stats"
)

// RingSlots opens and closes ring slots of the statistics segment (*stats.Writer does; a nil
// writer gives nil rings, which count nothing).
type RingSlots interface {
	OpenRing(t stats.Transport, name string) *stats.Ring
	CloseRing(r *stats.Ring)
}

// outlet is this process's sending side towards one inbox and its statistics ring.
type outlet struct {
	*ring.Outlet
	st *stats.Ring
}

// rxStats is what a receiving socket publishes about its rings: datagrams and bytes taken
// (counted as they are), the senders' drops and wake-ups and the depth (summed over the inbox's
// rings now and then: refreshRxStats).
type rxStats struct {
	st           *stats.Ring
	since        int    // ring receives since the last refresh
	drops, wakes uint64 // the senders' totals as last seen
}

// rxRefreshEvery is how many ring receives pass between two refreshes of the summed counters.
const rxRefreshEvery = 256

// openRxStats opens the statistics ring of a new inbox; u.mu is held.
func (u *UDP) openRxStats(in *ring.Inbox, fd int) {
	if u.env.p.Stats == nil {
		return
	}
	u.rx.st = u.env.p.Stats.OpenRing(stats.TransportSHM, "rx "+in.Name()+" fd "+strconv.Itoa(fd))
}

// countTaken counts the datagram the last Peek returned, which a receive takes: in the ring's
// statistics, unless it came from the box, where it was counted when queued (prefetch); the
// engine then leaves it out of the socket's (TakePrecounted). The caller holds rxmu.
func (u *UDP) countTaken(in *ring.Inbox, bytes int) {
	if in.PeekedQueued() {
		u.precounted.Add(1)
		return
	}
	u.countRingRx(in, bytes)
}

// TakePrecounted reports, once per datagram a receive took from the box, that the datagram was
// counted when it was queued (transport.Precounter).
func (u *UDP) TakePrecounted() bool {
	for {
		v := u.precounted.Load()
		if v <= 0 {
			return false
		}
		if u.precounted.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// countRingRx counts one datagram taken from a ring; the caller holds rxmu.
func (u *UDP) countRingRx(in *ring.Inbox, bytes int) { u.countRingRxN(in, 1, bytes) }

// countRingRxN counts n datagrams taken from rings at once, bytes in all; the caller holds rxmu.
func (u *UDP) countRingRxN(in *ring.Inbox, n, bytes int) {
	if u.rx.st == nil || n == 0 {
		return
	}
	u.rx.st.CountRxN(n, bytes)
	if u.rx.since += n; u.rx.since >= rxRefreshEvery {
		u.refreshRxStats(in)
	}
}

// refreshRxStats sums the senders' drops and wake-ups and the depth of the inbox's rings into
// the statistics ring; the caller holds rxmu.
func (u *UDP) refreshRxStats(in *ring.Inbox) {
	if u.rx.st == nil {
		return
	}
	u.rx.since = 0
	drops, wakes, depth := in.SumStats()
	// A ring detached (its sender left): its counts leave the sums; start again from here.
	if drops >= u.rx.drops {
		u.rx.st.Add(stats.RingRxDrops, drops-u.rx.drops)
	}
	if wakes >= u.rx.wakes {
		u.rx.st.Add(stats.RingWakeSent, wakes-u.rx.wakes)
	}
	u.rx.drops, u.rx.wakes = drops, wakes
	u.rx.st.SetQueue(int(min(depth, 1<<31)), 0)
}

// sleeping counts a receiver arming its doorbell before it sleeps, and refreshes the sums.
func (u *UDP) sleeping(in *ring.Inbox) {
	if u.rx.st == nil {
		return
	}
	u.rx.st.CountWakeup(false)
	u.rxmu.Lock()
	u.refreshRxStats(in)
	u.rxmu.Unlock()
}

// closeRxStats frees the statistics ring of the socket's inbox.
func (u *UDP) closeRxStats() {
	if u.env.p.Stats != nil && u.rx.st != nil {
		u.env.p.Stats.CloseRing(u.rx.st)
		u.rx.st = nil
	}
}

// send puts one datagram into the outlet's ring and counts it: sent, dropped (ErrFull), and the
// wake-up the receiver needs; afterKernel marks it as following datagrams its socket sent to the
// same receiver through the kernel (kernelfirst.go).
func (o *outlet) send(name []byte, bufs [][]byte, total int, afterKernel bool) (wake bool, err error) {
	if afterKernel {
		wake, err = o.SendAfterKernel(name, bufs, total)
	} else {
		wake, err = o.Send(name, bufs, total)
	}
	if o.st == nil {
		return wake, err
	}
	if err == ring.ErrFull {
		o.st.CountTxDrop()
	}
	// a datagram sent and its wake-up are counted by the outlet, under its lock, into the words
	// the statistics ring gave it (ring.Outlet.CountInto): the library's sends count there too
	return wake, err
}

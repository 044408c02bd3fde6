package xdp

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/goxio/goxio/offload/xdp"
)

// rxBuf is one received frame waiting in the queues of the sockets it was delivered to. It
// belongs to its xsk's bufs; refs counts the queues holding it, and the frame goes back to the
// fill ring when the last one let go.
type rxBuf struct {
	x       *xsk
	idx     int32
	f       xdp.Frame
	payload []byte         // the UDP payload, aliasing f.Data
	src     netip.AddrPort // as on the wire: 4-byte IPv4 or 16-byte IPv6, no zone
	scope   uint32         // the scope id of a link-local IPv6 source (the receiving interface)
	refs    atomic.Int32
}

// rxQueue is a socket's queue of received frames: a bounded ring under a mutex.
type rxQueue struct {
	mu   sync.Mutex
	buf  []*rxBuf
	head int
	n    int
	// sleepers counts threads about to sleep or sleeping on the socket in a receive: a thread
	// that queues a frame for the socket wakes them through its wake pipe.
	sleepers atomic.Int32
	// watched is set once select, poll or epoll asked for the socket's bell (Bell): from then on
	// a queued frame writes to the wake pipe whenever no iomux thread polls the socket (spinners
	// is zero), since a sleeping select, poll or epoll (also one nested in another) is not marked.
	watched  atomic.Bool
	spinners atomic.Int32
	// pending is set when a byte was written to the wake pipe and not drained yet: one byte is
	// enough to wake every sleeper, so further frames do not write again (drainBell clears it).
	pending atomic.Bool
	// arrivals grows with every queued frame (edge-triggered epoll).
	arrivals atomic.Uint64
	// depth mirrors n for lock-free readers.
	depth atomic.Int32
	// bellW is the write end of the socket's wake pipe (-1 before the first sleep). It is
	// written and closed only under mu, so a closed number is never written to.
	bellW atomic.Int32
	wakes atomic.Uint64 // bytes written to the wake pipe
	// held counts the frames the program holds (zero-copy receive, hold.go) and holds names
	// them: they take room in the queue as queued frames do.
	held  int
	holds holdTable
}

func newRxQueue(n int) *rxQueue {
	q := &rxQueue{buf: make([]*rxBuf, n)}
	q.bellW.Store(-1)
	return q
}

// push queues b and wakes the socket's sleepers; false when the queue is full, counting the
// frames the program holds (or closed: buf nil).
func (q *rxQueue) push(b *rxBuf) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n+q.held >= len(q.buf) {
		return false
	}
	q.buf[(q.head+q.n)%len(q.buf)] = b
	q.n++
	q.depth.Store(int32(q.n))
	q.arrivals.Add(1)
	if q.sleepers.Load() > 0 || q.watched.Load() && q.spinners.Load() == 0 {
		if w := q.bellW.Load(); w >= 0 && !q.pending.Load() && !q.pending.Swap(true) {
			q.wakes.Add(1)
			writeByte(int(w)) // a full pipe is awake already
		}
	}
	return true
}

// takeAll empties the queue (close) and returns what it had, the frames the program held
// included (their handles are refused from then on).
func (q *rxQueue) takeAll() []*rxBuf {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.holds.takeAll(make([]*rxBuf, 0, q.n+q.held))
	q.held = 0
	for q.n > 0 {
		out = append(out, q.buf[q.head])
		q.buf[q.head] = nil
		q.head = (q.head + 1) % len(q.buf)
		q.n--
	}
	q.buf = nil
	q.depth.Store(0)
	return out
}

// release drops one reference to b; the last gives the frame back to the fill ring.
func (b *rxBuf) release() {
	if b.refs.Add(-1) != 0 {
		return
	}
	x := b.x
	x.rxmu.Lock()
	var one [1]xdp.Frame
	one[0] = b.f
	x.s.Release(one[:])
	b.f, b.payload = xdp.Frame{}, nil
	x.free = append(x.free, b.idx)
	x.rxmu.Unlock()
}

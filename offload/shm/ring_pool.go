package shm

import (
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/shmseg"
)

// Reusing rings. A sender makes one ring (a file with its space reserved, a mapping) per inbox
// it sends to; a server answering a new client socket per request made and freed 256 KiB of
// /dev/shm per request. So the sender keeps what it made, as the creator of a connection
// segment does (conn_pool.go):
//
//   - Every ring keeps the name it was built under, its pool name
//     <dir>/goxio.ringpool.<pid>.<n>, for its life; the ring name <inbox>.<pid>.<id> the
//     receiver knows is a second link to the same file (the receiver unlinks it when it
//     detaches the ring or closes the inbox, as before).
//   - Outlet.Close puts the ring in this process's pool (at most ringPoolMax; the oldest is
//     dropped for good) when the receiver detached it (rgDetached, the receiver's last access
//     to the ring); otherwise it removes the pool name and unmaps, as before.
//   - DialInbox takes a pooled ring of the same directory and capacity: the bytes its last life
//     wrote (up to its tail) and its header are zeroed, the header written as for a new ring
//     (new id), then the ring linked under the new ring name.
//   - A pool name whose sender died is swept like any ring of a dead sender (SweepDir: ring
//     magic, sender gone, no live inbox of that name); DrainRingPool removes the pool at exit.

// rgPool is the ring header word holding the number of the ring's pool name (0: none), in the
// identity line the sender writes before the ring gets its name.
const rgPool = 48

// ringPoolMax bounds the rings a process keeps for reuse.
const ringPoolMax = 8

// pooledRing is a ring whose outlet closed after the receiver detached it.
type pooledRing struct {
	dir      string
	mem      []byte
	capacity uint64
	n        uint64 // the pool name's number
	path     string // the pool name
	dev, ino uint64
}

var ringPool struct {
	mu   sync.Mutex
	ents []pooledRing // oldest first
}

// ringPoolPath is pool name n of process pid.
func ringPoolPath(dir string, pid int, n uint64) string {
	return shmseg.Join(dir, "goxio.ringpool."+strconv.Itoa(pid)+"."+strconv.FormatUint(n, 36))
}

// ringPoolPut keeps a ring the receiver detached.
func ringPoolPut(p pooledRing) {
	ringPool.mu.Lock()
	defer ringPool.mu.Unlock()
	if len(ringPool.ents) >= ringPoolMax {
		dropRing(ringPool.ents[0])
		ringPool.ents = append(ringPool.ents[:0], ringPool.ents[1:]...)
	}
	ringPool.ents = append(ringPool.ents, p)
}

// ringPoolTake returns a pooled ring of dir with this capacity, taken out of the pool.
func ringPoolTake(dir string, capacity uint64) (pooledRing, bool) {
	ringPool.mu.Lock()
	defer ringPool.mu.Unlock()
	for i, p := range ringPool.ents {
		if p.dir == dir && p.capacity == capacity {
			ringPool.ents = append(ringPool.ents[:i], ringPool.ents[i+1:]...)
			return p, true
		}
	}
	return pooledRing{}, false
}

// dropRing removes a pooled ring for good: its pool name (if it still names it) and the mapping.
func dropRing(p pooledRing) {
	var st unix.Stat_t
	if unix.Lstat(p.path, &st) == nil && st.Dev == p.dev && st.Ino == p.ino {
		shmseg.Unlink(p.path)
	}
	shmseg.Unmap(p.mem)
}

// DrainRingPool removes every ring the process kept for reuse (at exit, after its outlets
// closed).
func DrainRingPool() {
	ringPool.mu.Lock()
	defer ringPool.mu.Unlock()
	for _, p := range ringPool.ents {
		dropRing(p)
	}
	ringPool.ents = nil
}

// newRingFile makes the file of a ring of this capacity for inbox: a pooled one when there is
// one, else a new one under a new pool name; then links it under the ring name of id. The
// header is written (initRing) before the link: nobody sees a half-written ring.
func newRingFile(dir, inbox string, capacity uint64, pid int, start, id uint64) (pooledRing, error) {
	for {
		p, reused := ringPoolTake(dir, capacity)
		if reused {
			// A record is published by its own header word, so the bytes of the last life must
			// go (only those: up to its tail, the whole area once it wrapped).
			used := min(atomic.LoadUint64(word64(p.mem, rgTail)), capacity)
			clear(p.mem[ringDataOff : ringDataOff+int(used)])
			for off := 0; off < ringDataOff; off += 8 {
				atomic.StoreUint64(word64(p.mem, off), 0)
			}
		} else {
			p = pooledRing{dir: dir, capacity: capacity, n: id, path: ringPoolPath(dir, pid, id)}
			mem, err := createSegment(p.path, ringDataOff+int(capacity))
			if err != nil {
				return pooledRing{}, err
			}
			p.mem = mem
			var st unix.Stat_t
			if err := unix.Stat(p.path, &st); err != nil {
				dropRing(p)
				return pooledRing{}, err
			}
			p.dev, p.ino = st.Dev, st.Ino
		}
		atomic.StoreUint64(word64(p.mem, rgPool), p.n)
		initRing(p.mem, capacity, pid, start, id)
		err := unix.Link(p.path, shmseg.Join(dir, ringName(inbox, pid, id)))
		if err == nil {
			return p, nil
		}
		if reused && err == unix.ENOENT {
			dropRing(p) // its pool name went away (a sweep): make a new one
			continue
		}
		if reused {
			ringPoolPut(p)
		} else {
			dropRing(p)
		}
		return pooledRing{}, err
	}
}

// unlinkDeadPool removes the pool name of a ring whose sender died (the receiver detaches it;
// nobody else would remove the name before a sweep): only when the name still names the ring's
// file.
func unlinkDeadPool(dir string, r *ring) {
	n := atomic.LoadUint64(word64(r.mem, rgPool))
	if n == 0 {
		return
	}
	path := ringPoolPath(dir, r.pid, n)
	var pst, rst unix.Stat_t
	if unix.Lstat(path, &pst) == nil && unix.Lstat(r.path, &rst) == nil && pst.Dev == rst.Dev && pst.Ino == rst.Ino {
		shmseg.Unlink(path)
	}
}

package shm

import (
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
	"github.com/goxio/goxio/internal/shmseg"
)

// Reusing connection segments. Making a segment (file, space reserved for both rings, mapping)
// and dropping it (unmapping, freeing the pages) cost most of a short connection between goxio
// processes: with 1 MiB rings, 200 of the 340 us of a connection per request. So the creator
// keeps what it made:
//
//   - Every segment side 0 creates keeps the temporary name it was built under, its pool name
//     <dir>/goxio-tcp-pool.new.<pid>.<n> (n in the header, cnPool), for its life; the
//     connection name is a second link to the same file (side 1 unlinks it when it attaches,
//     as before).
//   - Side 0's Close removes the connection name as before and, instead of unmapping, puts the
//     mapping in this process's pool (at most connPoolMax; the oldest is dropped for good).
//   - Side 1's Close sets tagReleased in its tag as its last access to the mapping. A pooled
//     segment is reused once nobody else can touch it: side 1 released it, is dead, or never
//     attached (side 0's Close removed the name under its lock, so nobody can attach later).
//   - Reuse (createConn): the header page is zeroed and written as for a new segment (new
//     token), then linked under the new connection name. The data areas keep old bytes; a
//     reader only ever reads between the head and the tail the writer published in this life.
//   - A pool name of a dead process is swept like a temporary name (SweepConns, ".new.<pid>.");
//     side 1 removes it when the creator died before closing (so a killed creator leaves
//     nothing once its peer closed); DrainConnPool removes the pool at exit.

// tagReleased is set in side 1's tag by its Close, after its last access to the mapping.
const tagReleased = 2

// cnPool is the header word holding the creator's pool number (0: none), next to the token.
const cnPool = 56

// connPoolMax bounds the segments a process keeps for reuse (each is 4 KiB plus both rings).
const connPoolMax = 4

// pooled is a segment side 0 closed, still mapped and named by its pool name.
type pooled struct {
	dir        string
	mem        []byte
	cap0, cap1 uint64
	path       string // the pool name
	seq        uint64
	dev, ino   uint64
}

var connPool struct {
	mu   sync.Mutex
	ents []pooled // oldest first
}

// poolPath is the pool name of segment seq of process pid.
func poolPath(dir string, pid int, seq uint64) string {
	return shmseg.Join(dir, connNamePrefix+"pool.new."+strconv.Itoa(pid)+"."+strconv.FormatUint(seq, 36))
}

// released reports whether nobody but side 0 can touch the segment in mem any more (side 0 has
// closed it and removed its connection name).
func released(mem []byte) bool {
	tag1 := atomic.LoadUint64(word64(mem, sideOff(1)+sdTag))
	if tag1 == 0 || tag1&tagReleased != 0 {
		return true
	}
	return !procstat.AliveRecent(tagPID(tag1), atomic.LoadUint64(word64(mem, sideOff(1)+sdStart)))
}

// poolPut keeps a segment side 0 has just closed (its connection name removed).
func poolPut(p pooled) {
	connPool.mu.Lock()
	defer connPool.mu.Unlock()
	if len(connPool.ents) >= connPoolMax {
		drop(connPool.ents[0])
		connPool.ents = append(connPool.ents[:0], connPool.ents[1:]...)
	}
	connPool.ents = append(connPool.ents, p)
}

// poolTake returns a pooled segment of dir with these capacities that nobody else can touch any
// more, taken out of the pool; false when there is none.
func poolTake(dir string, cap0, cap1 uint64) (pooled, bool) {
	connPool.mu.Lock()
	defer connPool.mu.Unlock()
	for i, p := range connPool.ents {
		if p.dir == dir && p.cap0 == cap0 && p.cap1 == cap1 && released(p.mem) {
			connPool.ents = append(connPool.ents[:i], connPool.ents[i+1:]...)
			return p, true
		}
	}
	return pooled{}, false
}

// drop removes a pooled segment for good: its pool name (if it still names it) and our mapping.
func drop(p pooled) {
	var st unix.Stat_t
	if unix.Lstat(p.path, &st) == nil && st.Dev == p.dev && st.Ino == p.ino {
		shmseg.Unlink(p.path)
	}
	shmseg.Unmap(p.mem)
}

// DrainConnPool removes every segment the process kept for reuse (at exit, after the
// connections closed).
func DrainConnPool() {
	connPool.mu.Lock()
	defer connPool.mu.Unlock()
	for _, p := range connPool.ents {
		drop(p)
	}
	connPool.ents = nil
}

// resetConn zeroes the header page of a segment taken from the pool (nobody else maps it
// writable any more; words through atomics, as everywhere in a segment).
func resetConn(mem []byte) {
	for off := 0; off < connDataOff; off += 8 {
		atomic.StoreUint64(word64(mem, off), 0)
	}
}

// releaseSide1 is side 1's part at Close, with its mapping still there: the creator may reuse
// the segment from now on; when the creator died without closing, side 1 removes its pool name.
func releaseSide1(mem []byte, dev, ino uint64, dir string) {
	tag0 := atomic.LoadUint64(word64(mem, sideOff(0)+sdTag))
	start0 := atomic.LoadUint64(word64(mem, sideOff(0)+sdStart))
	seq := atomic.LoadUint64(word64(mem, cnPool))
	closed0 := StreamState(atomic.LoadUint64(word64(mem, sideOff(0)+sdFlags)))&StateClosed != 0
	atomic.OrUint64(word64(mem, sideOff(1)+sdTag), tagReleased)
	if seq == 0 || closed0 || dir == "" || procstat.Alive(tagPID(tag0), start0) {
		return
	}
	path := poolPath(dir, tagPID(tag0), seq)
	var st unix.Stat_t
	if unix.Lstat(path, &st) == nil && st.Dev == dev && st.Ino == ino {
		shmseg.Unlink(path)
	}
}

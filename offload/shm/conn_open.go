package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/goxio/goxio/internal/shmseg"

	"golang.org/x/sys/unix"
)

// Opening a connection segment: who creates, who attaches, and what is stale.
//
// Both ends of a TCP connection call OpenConn with the same tuple (each its own Local and
// Remote) at any time after the kernel connection is established, in any order:
//
//  1. Create: the segment is built completely under a temporary name
//     (<name>.new.<pid>.<n>, O_EXCL, 0600, fallocate'd) and then link(2)ed to <name>, which
//     fails with EEXIST if the name exists. A file under <name> is therefore always complete:
//     nobody ever sees a half-written header. The end whose link succeeds is side 0.
//  2. Attach (the link failed): open <name>, take flock(LOCK_EX) on it, check that <name>
//     still names the file we locked, map it and judge it:
//     - joinable: valid header (magic, version, capacities, size), same generation, the
//     creator's endpoints mirror ours (its local is our remote and vice versa), creator alive
//     (pid and start time), not closed, side 1 free. We claim side 1 (CAS on its tag), and
//     unlink <name> while still holding the lock: the name is only a rendezvous, the mapping
//     is what both ends use. This end is side 1.
//     - busy: a valid header whose live creator is not our peer (its endpoints do not mirror
//     ours): never touched; OpenConn fails with an error wrapping unix.EEXIST.
//     - stale, anything else (a dead creator, a closed one, side 1 already taken, another
//     generation, garbage): unlinked under the lock, never joined; then back to 1.
//
// Every unlink of <name> happens under flock(LOCK_EX) of the file it names, after checking
// that <name> still names it: two ends judging the same stale file cannot remove each other's
// fresh segment. The creator's Close removes <name> (with the same check) when no peer took it.
// Locks are taken without blocking (a few retries, then EEXIST): a stopped process holding one
// cannot hang us. Bounded: at most a few create/attach rounds.

// ConnConfig describes one end of a TCP connection switching to shared memory.
type ConnConfig struct {
	// Dir is the directory of the segments (normally /dev/shm).
	Dir string
	// NetNS is the connection's network namespace (the inode of /proc/self/ns/net): the same
	// 4-tuple may exist in two namespaces of the host, which share Dir.
	NetNS uint64
	// Local and Remote are this end's address and its peer's (getsockname, getpeername).
	Local, Remote netip.AddrPort
	// SendBytes and RecvBytes size the direction this end writes and the one it reads
	// (SO_SNDBUF / SO_RCVBUF-derived), rounded up to a power of two in [MinStreamBytes,
	// MaxStreamBytes]. Only the creator's sizes count; an attaching end takes what it finds.
	SendBytes, RecvBytes int
	// Gen is an optional value both ends agree on beforehand (0 when none): a segment
	// carrying another value is stale.
	Gen uint64
}

// connSeq numbers the temporary names of this process.
var connSeq atomic.Uint64

// OpenConn creates the connection segment <Dir>/<ConnName> (side 0) or attaches to the one
// the peer created (side 1), replacing a stale leftover of the same name; see the rules above.
// Errors: ErrNoSpace when the file system is full, an error wrapping unix.EEXIST when the name
// is held by a live segment we may not join (or a lock stayed taken), unix.EINVAL for an
// invalid endpoint or directory.
func OpenConn(cfg ConnConfig) (*Conn, error) {
	if !cfg.Local.IsValid() || !cfg.Remote.IsValid() || cfg.Dir == "" {
		return nil, fmt.Errorf("open conn %v-%v: %w", cfg.Local, cfg.Remote, unix.EINVAL)
	}
	name := ConnName(cfg.NetNS, cfg.Local, cfg.Remote)
	pid, start, err := selfIdentity()
	if err != nil {
		return nil, fmt.Errorf("open conn %s: own start time: %w", name, err)
	}
	path := shmseg.Join(cfg.Dir, name)
	// Attach first: the second end finds the name in one open(2) and builds nothing (creating
	// first made it build a whole segment only to find the name taken); the first end pays
	// that failed open(2).
	for range 4 {
		c, again, err := attachConn(cfg, name, path, pid, start)
		if c != nil || !again {
			return c, err
		}
		c, err = createConn(cfg, name, path, pid, start)
		if err == nil || !errors.Is(err, unix.EEXIST) {
			return c, err
		}
	}
	return nil, fmt.Errorf("open conn %s: stale segments keep appearing: %w", name, unix.EEXIST)
}

// createConn builds the segment under a temporary name and links it to path. An error
// wrapping EEXIST means path exists.
func createConn(cfg ConnConfig, name, path string, pid int, start uint64) (*Conn, error) {
	cap0, cap1 := streamCapacity(cfg.SendBytes), streamCapacity(cfg.RecvBytes)
	var tok [8]byte
	// getrandom(2) directly: crypto/rand's first use arms a one-minute runtime timer (its
	// "entropy blocked" warning), which starts the Go netpoller (epoll_create1, eventfd2)
	// inside the program.
	if _, err := unix.Getrandom(tok[:], 0); err != nil {
		return nil, fmt.Errorf("open conn %s: token: %w", name, err)
	}
	token := max(binary.NativeEndian.Uint64(tok[:]), 1)
	for {
		p, reused := poolTake(cfg.Dir, cap0, cap1)
		if reused {
			resetConn(p.mem)
		} else {
			// start and pid keep a later process with our pid from picking the same pool name.
			p = pooled{dir: cfg.Dir, cap0: cap0, cap1: cap1, seq: start<<20 | connSeq.Add(1)&(1<<20-1)}
			p.path = poolPath(cfg.Dir, pid, p.seq)
			mem, err := createSegment(p.path, connSize(cap0, cap1))
			if err != nil {
				return nil, fmt.Errorf("open conn %s: %w", name, err)
			}
			p.mem = mem
			var st unix.Stat_t
			if err := unix.Stat(p.path, &st); err != nil {
				drop(p)
				return nil, fmt.Errorf("open conn %s: stat: %w", name, err)
			}
			p.dev, p.ino = st.Dev, st.Ino
		}
		atomic.StoreUint64(word64(p.mem, cnPool), p.seq)
		initConn(p.mem, cap0, cap1, cfg, token, pid, start)
		err := unix.Link(p.path, path)
		switch {
		case err == nil:
			c := newConn(p.mem, 0, cap0, cap1, name, path)
			c.dev, c.ino, c.pool = p.dev, p.ino, p
			return c, nil
		case errors.Is(err, unix.EEXIST) && reused:
			poolPut(p) // still ours to reuse: nobody has seen it
			return nil, fmt.Errorf("open conn %s: link: %w", name, err)
		case errors.Is(err, unix.EEXIST):
			// The peer created first (both ends looked at once): a new segment is not kept, so
			// that a process killed later leaves no file nobody else knows of.
			drop(p)
			return nil, fmt.Errorf("open conn %s: link: %w", name, err)
		case reused:
			drop(p) // its pool name went away (a sweep): make a new one
			continue
		}
		drop(p)
		return nil, fmt.Errorf("open conn %s: link: %w", name, err)
	}
}

// initConn writes the header of a fresh (zeroed) segment, side 0 included; magic last.
func initConn(mem []byte, cap0, cap1 uint64, cfg ConnConfig, token uint64, pid int, start uint64) {
	st := func(off int, v uint64) { atomic.StoreUint64(word64(mem, off), v) }
	st(cnVersion, connVersion)
	st(cnCap0, cap0)
	st(cnCap1, cap1)
	st(cnGen, cfg.Gen)
	st(cnNetNS, cfg.NetNS)
	st(cnToken, token)
	putEndpoint(mem, cnEndA, canonEndpoint(cfg.Local))
	putEndpoint(mem, cnEndB, canonEndpoint(cfg.Remote))
	st(sideOff(0)+sdStart, start)
	st(sideOff(0)+sdTag, uint64(uint32(pid))<<32|tagReady)
	st(cnMagic, connMagic)
}

func putEndpoint(mem []byte, off int, e endpoint) {
	atomic.StoreUint64(word64(mem, off), binary.NativeEndian.Uint64(e.addr[0:8]))
	atomic.StoreUint64(word64(mem, off+8), binary.NativeEndian.Uint64(e.addr[8:16]))
	atomic.StoreUint64(word64(mem, off+16), uint64(e.port))
}

func getEndpoint(mem []byte, off int) (e endpoint, ok bool) {
	binary.NativeEndian.PutUint64(e.addr[0:8], atomic.LoadUint64(word64(mem, off)))
	binary.NativeEndian.PutUint64(e.addr[8:16], atomic.LoadUint64(word64(mem, off+8)))
	p := atomic.LoadUint64(word64(mem, off+16))
	e.port = uint16(p)
	return e, p <= 0xffff
}

// checkConnHeader validates the identity line of a mapped segment against its size and
// returns the capacities. The values are read once: the caller uses these private copies.
func checkConnHeader(mem []byte) (cap0, cap1 uint64, err error) {
	if len(mem) < connSize(MinStreamBytes, MinStreamBytes) {
		return 0, 0, fmt.Errorf("%d bytes: %w", len(mem), ErrCorrupt)
	}
	if atomic.LoadUint64(word64(mem, cnMagic)) != connMagic ||
		atomic.LoadUint64(word64(mem, cnVersion)) != connVersion {
		return 0, 0, fmt.Errorf("bad magic or version: %w", ErrCorrupt)
	}
	cap0, cap1 = atomic.LoadUint64(word64(mem, cnCap0)), atomic.LoadUint64(word64(mem, cnCap1))
	if !validStreamCap(cap0) || !validStreamCap(cap1) || connSize(cap0, cap1) != len(mem) {
		return 0, 0, fmt.Errorf("capacities %d+%d for %d bytes: %w", cap0, cap1, len(mem), ErrCorrupt)
	}
	if atomic.LoadUint64(word64(mem, cnToken)) == 0 {
		return 0, 0, fmt.Errorf("no token: %w", ErrCorrupt)
	}
	return cap0, cap1, nil
}

// verdict is what an attaching end makes of an existing segment.
type verdict int

const (
	joinable verdict = iota
	busy
	stale
)

// judgeConn decides whether the segment in mem may be joined by the end cfg describes.
func judgeConn(mem []byte, cfg ConnConfig) (cap0, cap1 uint64, v verdict) {
	cap0, cap1, err := checkConnHeader(mem)
	if err != nil {
		return 0, 0, stale
	}
	tag0 := atomic.LoadUint64(word64(mem, sideOff(0)+sdTag))
	start0 := atomic.LoadUint64(word64(mem, sideOff(0)+sdStart))
	a, okA := getEndpoint(mem, cnEndA)
	b, okB := getEndpoint(mem, cnEndB)
	// The creator is the peer of every connection this process makes to it or accepts from
	// it: a check against the recent answer for the same process costs one kill(2) instead of
	// a /proc read per connection (a connection per request paid ~8% of its CPU there). A
	// creator that died less than RecentTTL ago is taken for alive: the segment is then this
	// very connection's (mirrored endpoints, generation), whose kernel side ends with it too.
	creatorAlive := tag0&tagReady != 0 && processAliveRecent(tagPID(tag0), start0)
	mirrored := okA && okB && a == canonEndpoint(cfg.Remote) && b == canonEndpoint(cfg.Local) &&
		atomic.LoadUint64(word64(mem, cnNetNS)) == cfg.NetNS
	switch {
	case creatorAlive && !mirrored:
		return 0, 0, busy
	case !creatorAlive, !mirrored,
		atomic.LoadUint64(word64(mem, cnGen)) != cfg.Gen,
		StreamState(atomic.LoadUint64(word64(mem, sideOff(0)+sdFlags)))&StateClosed != 0,
		atomic.LoadUint64(word64(mem, sideOff(1)+sdTag)) != 0:
		return 0, 0, stale
	}
	return cap0, cap1, joinable
}

// attachConn tries to join the segment at path. stale reports that the caller should try to
// create again (the name was removed or replaced under us).
func attachConn(cfg ConnConfig, name, path string, pid int, start uint64) (c *Conn, again bool, err error) {
	fd, st, err := lockName(path)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESTALE) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("open conn %s: %w", name, err)
	}
	defer unix.Close(fd) // releases the lock
	size := st.Size
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != unix.Geteuid() || st.Mode&0o077 != 0 {
		// Not ours to judge or remove (another user's file, a directory...).
		return nil, false, fmt.Errorf("open conn %s: not a private regular file of ours: %w", name, unix.EEXIST)
	}
	if size < int64(connSize(MinStreamBytes, MinStreamBytes)) || size > int64(connSize(MaxStreamBytes, MaxStreamBytes)) {
		return nil, true, removeLocked(path)
	}
	mem, err := shmseg.Map(fd, int(size), true)
	if err != nil {
		return nil, false, fmt.Errorf("open conn %s: mmap: %w", name, err)
	}
	cap0, cap1, v := judgeConn(mem, cfg)
	switch v {
	case busy:
		shmseg.Unmap(mem)
		return nil, false, fmt.Errorf("open conn %s: held by a live segment of another connection: %w", name, unix.EEXIST)
	case stale:
		shmseg.Unmap(mem)
		return nil, true, removeLocked(path)
	}
	tagp := word64(mem, sideOff(1)+sdTag)
	if !atomic.CompareAndSwapUint64(tagp, 0, uint64(uint32(pid))<<32) {
		shmseg.Unmap(mem)
		return nil, true, removeLocked(path)
	}
	atomic.StoreUint64(word64(mem, sideOff(1)+sdStart), start)
	atomic.StoreUint64(tagp, uint64(uint32(pid))<<32|tagReady)
	// The segment is ours even if the name stays (the creator's Close removes it then).
	removeLocked(path)
	c = newConn(mem, 1, cap0, cap1, name, path)
	c.dev, c.ino, c.dir = st.Dev, st.Ino, cfg.Dir
	return c, false, nil
}

// lockName opens path (never following a symlink), takes flock(LOCK_EX) without blocking (a
// few retries) and checks that path still names the file locked. ENOENT when the name is gone
// or was replaced meanwhile.
func lockName(path string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, st, fmt.Errorf("open %s: %w", path, err)
	}
	for try := 0; ; try++ {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if (err != unix.EWOULDBLOCK && err != unix.EINTR) || try == 200 {
			unix.Close(fd)
			if err == unix.EWOULDBLOCK {
				err = unix.EEXIST
			}
			return -1, st, fmt.Errorf("lock %s: %w", path, err)
		}
		ts := unix.Timespec{Nsec: 100_000}
		unix.Nanosleep(&ts, nil)
	}
	var cur unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, fmt.Errorf("fstat %s: %w", path, err)
	}
	if err := unix.Lstat(path, &cur); err != nil || cur.Dev != st.Dev || cur.Ino != st.Ino {
		unix.Close(fd)
		return -1, st, fmt.Errorf("lock %s: replaced meanwhile: %w", path, unix.ENOENT)
	}
	return fd, st, nil
}

// removeLocked unlinks path; the caller holds the lock of the file it names (lockName).
func removeLocked(path string) error { return shmseg.Unlink(path) }

// removeOwnName unlinks path if it still names our file (dev, ino), under its lock.
func removeOwnName(path string, dev, ino uint64) error {
	fd, st, err := lockName(path)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	defer unix.Close(fd)
	if st.Dev != dev || st.Ino != ino {
		return nil
	}
	return removeLocked(path)
}

// newConn builds the private state of side side over a validated mapping.
func newConn(mem []byte, side int, cap0, cap1 uint64, name, path string) *Conn {
	c := &Conn{
		mem:     mem,
		side:    side,
		name:    name,
		path:    path,
		token:   atomic.LoadUint64(word64(mem, cnToken)),
		myFlags: word64(mem, sideOff(side)+sdFlags),
		peer:    word64(mem, sideOff(1-side)+sdFlags),
		peerTag: word64(mem, sideOff(1-side)+sdTag),
		peerSt:  word64(mem, sideOff(1-side)+sdStart),
	}
	caps := [2]uint64{cap0, cap1}
	t, r := &c.tx, &c.rx
	t.data, t.cap, t.mask = dirData(mem, side, cap0, cap1), caps[side], caps[side]-1
	t.tailp, t.headp, t.kernelp, t.spinners, t.sleepers, t.wakePending, t.spaceWait = dirWords(mem, side)
	r.data, r.cap, r.mask = dirData(mem, 1-side, cap0, cap1), caps[1-side], caps[1-side]-1
	r.tailp, r.headp, r.kernelp, r.spinners, r.sleepers, r.wakePending, r.spaceWait = dirWords(mem, 1-side)
	return c
}

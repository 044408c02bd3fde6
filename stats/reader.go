package stats

import (
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"runtime/debug"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/shmseg"
)

// The reader side: goxio_stats and tests map a segment and take snapshots.
// The segment is written by another process and treated as hostile input:
// every offset and size is checked against the mapping before use, and a
// fault (the file truncated under the mapping) becomes an error.

// Reader errors.
var (
	ErrNotSegment    = errors.New("not a goxio stats segment")
	ErrNotReady      = errors.New("stats segment is still being created")
	ErrTruncated     = errors.New("stats segment is truncated")
	ErrCorrupt       = errors.New("stats segment is corrupt")
	ErrLayoutVersion = errors.New("unsupported stats layout version")
)

// LayoutError reports a segment written with another layout version. It
// matches ErrLayoutVersion with errors.Is.
type LayoutError struct {
	Got, Want uint64
}

// Error says which versions disagree and what to do about it.
func (e *LayoutError) Error() string {
	return fmt.Sprintf("stats segment has layout version %d, this reader understands version %d "+
		"(use the goxio_stats that came with the library)", e.Got, e.Want)
}

// Is makes errors.Is(err, ErrLayoutVersion) true.
func (e *LayoutError) Is(target error) bool { return target == ErrLayoutVersion }

// Segment is a mapped segment, open for reading (and for zeroing and
// commands when the file could be opened read-write).
type Segment struct {
	path     string
	mem      []uint64
	hdr      []uint64
	geo      geometry
	writable bool
	mapped   bool
}

// OpenSegment maps the segment at path: read-write when permitted (needed
// for Zero and Post), read-only otherwise. Errors wrap ErrNotReady,
// ErrNotSegment, ErrLayoutVersion (as *LayoutError), ErrTruncated,
// ErrCorrupt or the open error (fs.ErrNotExist, fs.ErrPermission).
func OpenSegment(path string) (*Segment, error) {
	writable := true
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err == unix.EACCES || err == unix.EPERM || err == unix.EROFS {
		writable = false
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err == unix.EISDIR {
		return nil, fmt.Errorf("open stats segment %s: %w: %w", path, err, ErrNotSegment)
	}
	if err != nil {
		return nil, fmt.Errorf("open stats segment %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("open stats segment %s: fstat: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("open stats segment %s: not a regular file: %w", path, ErrNotSegment)
	}
	if st.Size < headerWords*8 {
		if st.Size == 0 {
			return nil, fmt.Errorf("open stats segment %s: empty file: %w", path, ErrNotReady)
		}
		return nil, fmt.Errorf("open stats segment %s: %d bytes: %w", path, st.Size, ErrTruncated)
	}
	words := int(min(st.Size, int64(MaxSocketsLimit+1<<16)*sockWords*8) / 8)
	b, err := shmseg.Map(fd, words*8, writable)
	if err != nil {
		return nil, fmt.Errorf("open stats segment %s: %w", path, err)
	}
	mem := shmseg.Words(b)
	s := &Segment{path: path, mem: mem, hdr: mem[:headerWords], writable: writable, mapped: true}
	if err := s.validate(); err != nil {
		shmseg.Unmap(b)
		return nil, fmt.Errorf("open stats segment %s: %w", path, err)
	}
	return s, nil
}

// newSegmentFromWords wraps words that are not a mapping (tests, fuzzing).
func newSegmentFromWords(mem []uint64) (*Segment, error) {
	if len(mem) < headerWords {
		return nil, ErrTruncated
	}
	s := &Segment{path: "memory", mem: mem, hdr: mem[:headerWords], writable: true}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Close unmaps the segment. The Segment must not be used afterwards.
func (s *Segment) Close() error {
	if !s.mapped {
		return nil
	}
	s.mapped = false
	mem := s.mem
	s.mem, s.hdr = nil, nil
	return shmseg.Unmap(shmseg.Bytes(mem))
}

// Path returns the segment's file name.
func (s *Segment) Path() string { return s.path }

// Writable reports whether the segment is mapped read-write.
func (s *Segment) Writable() bool { return s.writable }

// Pid returns the owning process's pid.
func (s *Segment) Pid() int { return int(atomic.LoadUint64(&s.hdr[hPid])) }

// StartTime returns the owning process's start time (clock ticks after boot).
func (s *Segment) StartTime() uint64 { return atomic.LoadUint64(&s.hdr[hStartTime]) }

// Alive reports whether the owning process (same pid and start time) runs.
func (s *Segment) Alive() bool { return ProcessAlive(s.Pid(), s.StartTime()) }

// validate checks the header and every area's bounds against the mapping.
func (s *Segment) validate() error {
	h := s.hdr
	mg := atomic.LoadUint64(&h[hMagic])
	state := atomic.LoadUint64(&h[hState])
	if mg == 0 && state == stateInit {
		return ErrNotReady
	}
	if mg != magic {
		return ErrNotSegment
	}
	if v := atomic.LoadUint64(&h[hVersion]); v != LayoutVersion {
		return &LayoutError{Got: v, Want: LayoutVersion}
	}
	if state == stateInit {
		return ErrNotReady
	}
	if size := atomic.LoadUint64(&h[hSize]); size > uint64(len(s.mem))*8 {
		return fmt.Errorf("header says %d bytes, file has %d: %w", size, len(s.mem)*8, ErrTruncated)
	}
	n := uint64(len(s.mem))
	var err error
	area := func(name string, offW, countW, perW int, minPer, minCount, maxCount uint64) (off, count, per int) {
		o, c, p := atomic.LoadUint64(&h[offW]), uint64(1), uint64(minPer)
		if countW >= 0 {
			c = atomic.LoadUint64(&h[countW])
		}
		if perW >= 0 {
			p = atomic.LoadUint64(&h[perW])
		}
		switch {
		case err != nil:
		case o < headerWords || o > n:
			err = fmt.Errorf("%s area at word %d outside %d words: %w", name, o, n, ErrCorrupt)
		case c < minCount || c > maxCount:
			err = fmt.Errorf("%s area has %d slots (want %d..%d): %w", name, c, minCount, maxCount, ErrCorrupt)
		case p < minPer || p > 1<<16:
			err = fmt.Errorf("%s slots of %d words (want >= %d): %w", name, p, minPer, ErrCorrupt)
		case c*p > n-o: // c <= 2^20 and p <= 2^16: no overflow
			err = fmt.Errorf("%s area (%d x %d words at %d) past the end (%d words): %w", name, c, p, o, n, ErrTruncated)
		}
		return int(o), int(c), int(p)
	}
	g := &s.geo
	g.infoOff, _, g.infoWords = area("info", hInfoOff, -1, hInfoWords, 1, 1, 1)
	g.sockOff, g.sockCount, g.sockWords = area("socket", hSockOff, hSockCount, hSockWords, sockWords, 0, MaxSocketsLimit)
	g.ringOff, g.ringCount, g.ringWords = area("ring", hRingOff, hRingCount, hRingWords, ringWords, 0, 1<<12)
	g.poolOff, g.poolCount, g.poolWords = area("pool", hPoolOff, hPoolCount, hPoolWords, poolWords, 0, 1<<12)
	g.iomuxOff, g.iomuxCount, g.iomuxWords = area("iomux", hIomuxOff, hIomuxCount, hIomuxWords, iomuxWords, 2, 1<<12)
	g.globalOff, _, g.globalWords = area("global", hGlobalOff, -1, hGlobalWords, globalWords, 1, 1)
	g.mcOff, g.mcCount, g.mcWordsPer = area("multicast", hMcOff, hMcCount, hMcWords, mcWords, 0, mcEntries)
	g.cmdOff, g.cmdCount, g.cmdWordsPer = area("command", hCmdOff, hCmdCount, hCmdWords, cmdWords, 0, 64)
	if err == nil && g.infoWords > infoMaxBytes/8+1 {
		err = fmt.Errorf("info area of %d words: %w", g.infoWords, ErrCorrupt)
	}
	return err
}

// faultError turns a memory fault (the file was truncated under the mapping)
// into an error; any other panic goes on.
func faultError(r any, path string) error {
	if f, ok := r.(interface{ Addr() uintptr }); ok {
		return fmt.Errorf("read stats segment %s: fault at %#x: %w", path, f.Addr(), ErrTruncated)
	}
	panic(r)
}

// Snapshot reads the whole segment. Slots are copied under their seqlocks;
// a slot that stays busy (its writer died mid-update) is skipped and counted
// in Snapshot.Busy.
func (s *Segment) Snapshot() (snap *Snapshot, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			snap, err = nil, faultError(r, s.path)
		}
	}()
	h, g := s.hdr, s.geo
	info, err := decodeInfo(loadBytes(s.mem[g.infoOff : g.infoOff+g.infoWords]))
	if err != nil {
		return nil, fmt.Errorf("read stats segment %s: %w: %w", s.path, err, ErrCorrupt)
	}
	info.Pid = int(atomic.LoadUint64(&h[hPid]))
	info.StartTime = atomic.LoadUint64(&h[hStartTime])
	snap = &Snapshot{
		Path:      s.path,
		Layout:    LayoutVersion,
		Process:   info,
		Taken:     time.Now(),
		Closed:    atomic.LoadUint64(&h[hState]) == stateClosed,
		ZeroEpoch: atomic.LoadUint64(&h[hZeroEpoch]),
		MaxSocket: g.sockCount,
	}
	if c := int64(atomic.LoadUint64(&h[hCreated])); c > 0 {
		snap.Created = time.Unix(0, c)
	}

	// Sockets and the multicast table, retried while the table changes.
	for try := 0; ; try++ {
		seq := atomic.LoadUint64(&h[hMcSeq])
		groups := s.readGroups()
		snap.Sockets, snap.Busy = s.readSockets()
		if atomic.LoadUint64(&h[hMcSeq]) == seq && seq&1 == 0 || try >= 10 {
			for i := range snap.Sockets {
				snap.Sockets[i].Groups = groupsOf(snap.Sockets[i].mcMap, groups)
				if snap.Sockets[i].Inode == 0 && !snap.Closed {
					snap.Sockets[i].Inode = socketInode(info.Pid, snap.Sockets[i].FD)
				}
			}
			break
		}
	}

	snap.Rings, snap.Pools, snap.Iomux = []RingSnapshot{}, []PoolSnapshot{}, []IomuxSnapshot{}
	rd := newSlotReader()
	buf := make([]uint64, max(ringWords, poolWords, iomuxWords))
	for i := range g.ringCount {
		off := g.ringOff + i*g.ringWords
		if rd.Read(s.mem[off:off+ringWords], buf) {
			if r, ok := decodeRing(i, buf); ok {
				snap.Rings = append(snap.Rings, r)
			}
		}
	}
	for i := range g.poolCount {
		off := g.poolOff + i*g.poolWords
		if rd.Read(s.mem[off:off+poolWords], buf) {
			if p, ok := decodePool(i, buf); ok {
				snap.Pools = append(snap.Pools, p)
			}
		}
	}
	for i := range g.iomuxCount {
		off := g.iomuxOff + i*g.iomuxWords
		if rd.Read(s.mem[off:off+iomuxWords], buf) {
			if m, ok := decodeIomux(i, buf); ok {
				snap.Iomux = append(snap.Iomux, m)
			}
		}
	}
	gw := make([]uint64, globalWords)
	for i := range gw {
		gw[i] = atomic.LoadUint64(&s.mem[g.globalOff+i])
	}
	snap.Global = decodeGlobal(gw)
	return snap, nil
}

// sockHigh returns how many socket slots to scan.
func (s *Segment) sockHigh() int {
	return int(min(atomic.LoadUint64(&s.hdr[hSockHigh]), uint64(s.geo.sockCount)))
}

// readSockets copies every socket slot in use.
func (s *Segment) readSockets() ([]SocketSnapshot, int) {
	// Size for the sockets open now (a gauge the writer keeps), bounded by
	// the scan: one allocation instead of a doubling series.
	high := s.sockHigh()
	open := atomic.LoadUint64(&s.mem[s.geo.globalOff+gSocketsCurrent])
	out := make([]SocketSnapshot, 0, int(min(uint64(high), open+8)))
	busy := 0
	var buf [sockWords]uint64
	rd := newSlotReader()
	g := s.geo
	for i := range high {
		off := g.sockOff + i*g.sockWords
		slot := s.mem[off : off+sockWords]
		if atomic.LoadUint64(&slot[sFlags])&flagInUse == 0 && atomic.LoadUint64(&slot[sSeq])&1 == 0 {
			continue
		}
		if !rd.Read(slot, buf[:]) {
			busy++
			continue
		}
		if snap, ok := decodeSocket(i, buf[:]); ok {
			out = append(out, snap)
		}
	}
	return out, busy
}

// readGroups copies the multicast table: entry index -> group.
func (s *Segment) readGroups() map[int]groupEntry {
	groups := make(map[int]groupEntry)
	g := s.geo
	for i := range g.mcCount {
		off := g.mcOff + i*g.mcWordsPer
		e := s.mem[off : off+mcWords]
		f := atomic.LoadUint64(&e[mcFlags])
		if f&flagInUse == 0 {
			continue
		}
		groups[i] = groupEntry{
			addr: wordsAddr(atomic.LoadUint64(&e[mcAddrHi]), atomic.LoadUint64(&e[mcAddrLo]), f&flagLocal4 != 0),
			refs: atomic.LoadUint64(&e[mcRefs]),
		}
	}
	return groups
}

// Zero sets every counter to zero and every maximum to its current level,
// with atomic swaps that cannot lose an increment racing with them: the next
// read starts from zero and later increments count exactly. keep selects the
// sockets to zero by fd (nil: all). Rings, pools, iomux and global counters
// are always zeroed.
func (s *Segment) Zero(keep func(fd int) bool) error {
	return s.zero(keep, nil)
}

// zero is Zero; taken, when not nil, receives every socket counter value it
// swapped out (tests account for every increment with it).
func (s *Segment) zero(keep func(fd int) bool, taken func(fd int, c Counter, v uint64)) (err error) {
	if !s.writable {
		return fmt.Errorf("zero counters of %s: %w", s.path, ErrReadOnly)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = faultError(r, s.path)
		}
	}()
	g := s.geo
	var buf [sockWords]uint64
	rd := newSlotReader()
	for i := range s.sockHigh() {
		off := g.sockOff + i*g.sockWords
		p := s.mem[off : off+sockWords]
		if !rd.Read(p, buf[:]) || buf[sFlags]&flagInUse == 0 {
			continue
		}
		if keep != nil && !keep(int(int32(buf[sFD]))) {
			continue
		}
		for j := sCounters; j < sGauges; j++ {
			v := atomic.SwapUint64(&p[j], 0)
			if taken != nil {
				taken(int(int32(buf[sFD])), Counter(j-sCounters), v)
			}
		}
		atomic.StoreUint64(&p[gRxQueuePktsMax], atomic.LoadUint64(&p[gRxQueuePkts]))
		atomic.StoreUint64(&p[gRxQueueBytesMax], atomic.LoadUint64(&p[gRxQueueBytes]))
	}
	for i := range g.ringCount {
		p := s.mem[g.ringOff+i*g.ringWords:][:ringWords]
		for c := range numRingCounters {
			atomic.SwapUint64(&p[ringWord(c)], 0)
		}
	}
	for i := range g.poolCount {
		p := s.mem[g.poolOff+i*g.poolWords:][:poolWords]
		atomic.SwapUint64(&p[pNoBufs], 0)
		atomic.StoreUint64(&p[pMinFree], atomic.LoadUint64(&p[pFree])+1)
	}
	for i := range g.iomuxCount {
		p := s.mem[g.iomuxOff+i*g.iomuxWords:][:iomuxWords]
		for j := mCounters; j < mPollingCPU; j++ {
			atomic.SwapUint64(&p[j], 0)
		}
	}
	for j := range globalCounterWords {
		atomic.SwapUint64(&s.mem[g.globalOff+j], 0)
	}
	atomic.AddUint64(&s.hdr[hZeroEpoch], 1)
	return nil
}

// groupEntry is one multicast table entry as read.
type groupEntry struct {
	addr netip.Addr
	refs uint64
}

// groupsOf maps a socket's bitmap of table entries to group addresses.
func groupsOf(bitmap [mcMapWords]uint64, table map[int]groupEntry) []netip.Addr {
	var out []netip.Addr
	for w, word := range bitmap {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			if e, ok := table[w*64+b]; ok {
				out = append(out, e.addr)
			}
		}
	}
	return out
}

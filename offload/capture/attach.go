package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
)

// ShmDir is where capture segments live.
const ShmDir = "/dev/shm"

// Path is the name of the capture segment of generation gen for process pid of user uid.
func Path(uid, pid int, gen uint64) string {
	return ShmDir + "/goxio." + strconv.Itoa(uid) + ".cap." + strconv.Itoa(pid) + "." + strconv.FormatUint(gen, 10)
}

// session is one attached capture: the mapped segment and what was copied and checked out of it.
type session struct {
	gen   uint64
	path  string
	mem   []byte   // the mapping; nil once detached (under mu)
	hdr   []uint64 // its header words
	socks []uint64 // its socket table
	ring  ring

	filter, trigger, stop *program
	reach                 int // the most bytes any of the programs reads; -1: everything
	snap                  int
	flags                 uint64
	toolPid               int
	toolStart             uint64

	state                            atomic.Uint64 // Trigger*, Stopped: our copy of HState
	seen, matched, captured, dropped atomic.Uint64
	sockCounts                       []atomic.Uint64 // SockWords per fd, published to socks
	lastSync, lastAlive              atomic.Int64
}

var (
	// mu serialises attaching, detaching and every write into a mapped segment.
	mu sync.Mutex
	// cur is the attached session; nil while none is.
	cur atomic.Pointer[session]
	// bad is a generation whose segment failed to attach: not tried again.
	bad atomic.Uint64
)

// current returns the session of the capture word's generation w, attaching or detaching first
// when the word changed; nil when nothing is to be captured.
func current(w uint64) *session {
	if s := cur.Load(); s != nil && s.gen == w {
		return s
	}
	if w == bad.Load() && w&Detach == 0 {
		return nil
	}
	mu.Lock()
	defer mu.Unlock()
	w = atomic.LoadUint64(word)
	s := cur.Load()
	if s != nil && s.gen == w {
		return s
	}
	if s != nil {
		s.detach()
	}
	if w&Detach != 0 || w == 0 {
		atomic.CompareAndSwapUint64(word, w, 0)
		return nil
	}
	s, err := attach(w)
	if err != nil {
		bad.Store(w)
		reportError(err)
		return nil
	}
	cur.Store(s)
	return s
}

// attach maps and checks the segment of generation gen.
func attach(gen uint64) (*session, error) {
	path := Path(unix.Getuid(), pid, gen)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("capture attach %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("capture attach %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != unix.Getuid() || st.Mode&0o077 != 0 {
		return nil, fmt.Errorf("capture attach %s: %w", path, errNotOurs)
	}
	if st.Size < HeaderSize+MinRingSize || uint64(st.Size) > MaxRingSize+1<<26 {
		return nil, fmt.Errorf("capture attach %s: size %d: %w", path, st.Size, ErrCorrupt)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("capture attach %s: mmap: %w", path, err)
	}
	s, err := check(mem)
	if err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("capture attach %s: %w", path, err)
	}
	s.gen, s.path = gen, path
	atomic.StoreUint64(&s.hdr[HPid], uint64(pid))
	return s, nil
}

var errNotOurs = errors.New("not a private file of this user")

// check validates a mapped segment's header and builds the session from copies of its contents.
func check(mem []byte) (*session, error) {
	hdr := words(mem[:HeaderSize])
	h := make([]uint64, HeaderWords)
	for i := range h {
		h[i] = atomic.LoadUint64(&hdr[i])
	}
	size := uint64(len(mem))
	switch {
	case h[HMagic] != Magic, h[HVersion] != Version, h[HSize] != size:
		return nil, ErrCorrupt
	case h[HFilterLen] > MaxProgram, h[HTriggerLen] > MaxProgram, h[HStopLen] > MaxProgram:
		return nil, ErrCorrupt
	case h[HSockCount] > MaxSockets, h[HSnapLen] > MaxSnapLen:
		return nil, ErrCorrupt
	case h[HRingSize] < MinRingSize, h[HRingSize] > MaxRingSize, h[HRingSize]&(h[HRingSize]-1) != 0:
		return nil, ErrCorrupt
	case h[HState] > Stopped:
		return nil, ErrCorrupt
	}
	progs := int(h[HFilterLen] + h[HTriggerLen] + h[HStopLen])
	progOff, sockOff, ringOff, want := Layout(progs, int(h[HSockCount]), h[HRingSize])
	if h[HProgOff] != progOff || h[HSockOff] != sockOff || h[HRingOff] != ringOff || want != size {
		return nil, ErrCorrupt
	}
	s := &session{
		mem: mem, hdr: hdr, snap: int(h[HSnapLen]), flags: h[HFlags],
		toolPid: int(h[HToolPid]), toolStart: h[HToolStart],
	}
	if s.snap <= 0 {
		s.snap = MaxSnapLen
	}
	s.socks = words(mem[sockOff:ringOff])[:h[HSockCount]*SockWords]
	s.sockCounts = make([]atomic.Uint64, len(s.socks))
	s.ring = ring{tail: &hdr[HTail], head: &hdr[HHead], buf: mem[ringOff:], size: h[HRingSize], pos: atomic.LoadUint64(&hdr[HTail])}
	off := progOff
	var err error
	load := func(n uint64) *program {
		raw := make([]bpf.RawInstruction, n)
		for i := range raw {
			b := mem[off : off+8]
			raw[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
			off += 8
		}
		p, e := newProgram(raw)
		if e != nil && err == nil {
			err = e
		}
		return p
	}
	s.filter, s.trigger, s.stop = load(h[HFilterLen]), load(h[HTriggerLen]), load(h[HStopLen])
	if err != nil {
		return nil, err
	}
	s.reach = 0
	for _, p := range []*program{s.filter, s.trigger, s.stop} {
		if p != nil && (p.reach < 0 || s.reach < 0) {
			s.reach = -1
		} else if p != nil {
			s.reach = max(s.reach, p.reach)
		}
	}
	s.state.Store(h[HState])
	return s, nil
}

// detach publishes the final counters and unmaps the segment. Under mu.
func (s *session) detach() {
	if s.mem == nil {
		return
	}
	s.publish()
	_ = unix.Munmap(s.mem)
	s.mem, s.hdr, s.socks = nil, nil, nil
	cur.CompareAndSwap(s, nil)
}

// publish copies the counters and the trigger state into the segment. Under mu, mapped.
func (s *session) publish() {
	atomic.StoreUint64(&s.hdr[HSeen], s.seen.Load())
	atomic.StoreUint64(&s.hdr[HMatched], s.matched.Load())
	atomic.StoreUint64(&s.hdr[HCaptured], s.captured.Load())
	atomic.StoreUint64(&s.hdr[HDropped], s.dropped.Load())
	for i := range s.sockCounts {
		if v := s.sockCounts[i].Load(); v != 0 {
			atomic.StoreUint64(&s.socks[i], v)
		}
	}
	// The tool may fire or stop the capture for every process (a trigger seen elsewhere with
	// --all); a state only moves forward.
	if shared := atomic.LoadUint64(&s.hdr[HState]); shared > s.state.Load() && shared <= Stopped {
		s.state.Store(shared)
	} else if local := s.state.Load(); local > shared {
		atomic.StoreUint64(&s.hdr[HState], local)
	}
}

// syncEvery is how often a tap publishes counters and picks up the tool's trigger state;
// aliveEvery how often it checks that the tool still runs (a tool killed with SIGKILL ends the
// capture within that time while packets flow).
const (
	syncEvery  = 50_000_000
	aliveEvery = 500_000_000
)

// sync publishes counters, and ends the capture when its tool died; now is the tap's clock.
func (s *session) sync(now int64) {
	if now-s.lastSync.Load() < syncEvery || !mu.TryLock() {
		return
	}
	defer mu.Unlock()
	if s.mem == nil {
		return
	}
	s.lastSync.Store(now)
	s.publish()
	if now-s.lastAlive.Load() < aliveEvery {
		return
	}
	s.lastAlive.Store(now)
	if !procstat.Alive(s.toolPid, s.toolStart) {
		gen := s.gen
		s.detach()
		_ = unix.Unlink(s.path)
		atomic.CompareAndSwapUint64(word, gen, 0)
		atomic.CompareAndSwapUint64(word, gen|Detach, 0)
	}
}

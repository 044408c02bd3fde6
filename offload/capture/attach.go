package capture

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
	"github.com/goxio/goxio/internal/shmseg"
)

// ShmDir is where capture segments live.
const ShmDir = "/dev/shm"

// Path is the name of the capture segment of generation gen for process pid of user uid.
func Path(uid, pid int, gen uint64) string {
	return ShmDir + "/goxio." + strconv.Itoa(uid) + ".cap." + strconv.Itoa(pid) + "." + strconv.FormatUint(gen, 10)
}

// session is one attached capture: the mapped segment and what was copied and checked out of it.
// Taps use the mapping between enter and exit; a session that ends is first marked dead (no new
// users), then unmapped once its users left (release).
type session struct {
	gen   uint64
	path  string
	mem   []byte   // the mapping
	hdr   []uint64 // its header words
	socks []uint64 // its socket table
	ring  ring     // guarded by mu

	filter, trigger, stop *program
	reach                 int // the most bytes any of the programs reads; -1: everything
	snap                  int
	flags                 uint64
	toolPid               int
	toolStart             uint64

	users     atomic.Int64
	dead      atomic.Bool
	unmap     sync.Once
	taps      atomic.Uint64 // taps so far: the clock is read every aliveTaps of them
	lastAlive atomic.Int64
}

var (
	// mu serialises attaching, detaching and every write into a trace ring.
	mu sync.Mutex
	// cur is the attached session; nil while none is.
	cur atomic.Pointer[session]
	// bad is a generation whose segment failed to attach: not tried again.
	bad atomic.Uint64
	// releasing counts sessions killed and not unmapped yet: a detach is acknowledged only when
	// none is left (the tool reads the final counters then).
	releasing atomic.Int32
)

// ackDetach acknowledges the detach the capture word w asks for (clears it) once no session is
// being released.
func ackDetach(w uint64) {
	if releasing.Load() == 0 {
		atomic.CompareAndSwapUint64(word, w, 0)
	}
}

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
	w = atomic.LoadUint64(word)
	old := cur.Load()
	if old != nil && old.gen == w {
		mu.Unlock()
		return old
	}
	if old != nil {
		old.kill()
	}
	var s *session
	if w&Detach == 0 && w != 0 {
		a, err := attach(w)
		if err != nil {
			bad.Store(w)
			reportError(err)
		} else {
			s = a
			cur.Store(s)
		}
	}
	mu.Unlock()
	if old != nil {
		old.release()
	}
	if w&Detach != 0 || w == 0 {
		ackDetach(w)
	}
	return s
}

// attach maps and checks the segment of generation gen: a private file of our user (the tool
// runs as that user, or as root and gives the file to it).
func attach(gen uint64) (*session, error) {
	path := Path(unix.Getuid(), pid, gen)
	mem, err := shmseg.Open(path, HeaderSize+MinRingSize, MaxRingSize+1<<26)
	if err != nil {
		return nil, fmt.Errorf("capture attach: %w", err)
	}
	s, err := check(mem)
	if err != nil {
		_ = shmseg.Unmap(mem)
		return nil, fmt.Errorf("capture attach %s: %w", path, err)
	}
	s.gen, s.path = gen, path
	atomic.StoreUint64(&s.hdr[HPid], uint64(pid))
	return s, nil
}

// check validates a mapped segment's header and builds the session from copies of its contents.
func check(mem []byte) (*session, error) {
	hdr := shmseg.Words(mem[:HeaderSize])
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
	s.socks = shmseg.Words(mem[sockOff:ringOff])[:h[HSockCount]*SockWords]
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
	return s, nil
}

// kill ends the session for new users. Under mu.
func (s *session) kill() {
	if !s.dead.Swap(true) {
		releasing.Add(1)
	}
	cur.CompareAndSwap(s, nil)
}

// release unmaps a killed session once no tap uses it; not under mu (a user may be waiting for
// it to write a record).
func (s *session) release() {
	s.unmap.Do(func() {
		for s.users.Load() != 0 {
			runtime.Gosched()
		}
		_ = shmseg.Unmap(s.mem)
		releasing.Add(-1)
		if w := atomic.LoadUint64(word); w&Detach != 0 {
			ackDetach(w)
		}
	})
}

// enter makes the caller a user of the mapping; false when the session ended.
func (s *session) enter() bool {
	s.users.Add(1)
	if s.dead.Load() {
		s.users.Add(-1)
		return false
	}
	return true
}

func (s *session) exit() { s.users.Add(-1) }

// aliveEvery is how often a tap checks that the capture's tool still runs: a tool killed with
// SIGKILL ends the capture within that time while packets flow (one packet in aliveTaps reads
// the clock, which costs more than everything else a tap does for a packet the filter rejects).
const (
	aliveEvery = 500_000_000
	aliveTaps  = 16
)

// checkAlive ends the capture when its tool died. It reports whether the session goes on.
func (s *session) checkAlive() bool {
	if s.taps.Add(1)%aliveTaps != 1 {
		return true
	}
	now := time.Now().UnixNano()
	last := s.lastAlive.Load()
	if now-last < aliveEvery || !s.lastAlive.CompareAndSwap(last, now) {
		return true
	}
	if procstat.Alive(s.toolPid, s.toolStart) {
		return true
	}
	mu.Lock()
	s.kill()
	mu.Unlock()
	s.release()
	_ = unix.Unlink(s.path)
	atomic.CompareAndSwapUint64(word, s.gen, 0)
	atomic.CompareAndSwapUint64(word, s.gen|Detach, 0)
	return false
}

// state is the trigger state; the tool may move it forward for every process (a trigger seen
// in another one with --all).
func (s *session) state() uint64 { return atomic.LoadUint64(&s.hdr[HState]) }

// advance moves the trigger state forward to st.
func (s *session) advance(st uint64) {
	for {
		old := atomic.LoadUint64(&s.hdr[HState])
		if old >= st || atomic.CompareAndSwapUint64(&s.hdr[HState], old, st) {
			return
		}
	}
}

// count adds one to a header counter and, when the socket table has fd, to the socket's.
func (s *session) count(fd, hdrWord, sockWord int) {
	atomic.AddUint64(&s.hdr[hdrWord], 1)
	if i := fd*SockWords + sockWord; fd >= 0 && i < len(s.socks) {
		atomic.AddUint64(&s.socks[i], 1)
	}
}

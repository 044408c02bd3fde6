package capture

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/shmseg"
)

// Spec is what the tool asks of one process's capture.
type Spec struct {
	Pid       int // the captured process
	UID       int // its user: the segment is named for and given to it
	Gen       uint64
	ToolPid   int
	ToolStart uint64
	SnapLen   int
	Flags     uint64
	State     uint64 // TriggerNone or TriggerWaiting
	Filter    []bpf.RawInstruction
	Trigger   []bpf.RawInstruction
	Stop      []bpf.RawInstruction
	Sockets   int    // fds in the socket table
	RingSize  uint64 // a power of two
}

// Segment is the tool's side of one capture segment.
type Segment struct {
	Path  string
	mem   []byte
	hdr   []uint64
	socks []uint64
	*Reader
}

// Create makes the segment of spec under ShmDir (0600, the same user or root may attach) and
// fills its header; the capture starts when the tool stores spec.Gen in the process's capture
// word.
func Create(spec Spec) (*Segment, error) {
	if spec.RingSize < MinRingSize || spec.RingSize > MaxRingSize || spec.RingSize&(spec.RingSize-1) != 0 {
		return nil, fmt.Errorf("create capture segment: ring size %d: not a power of two in [%d, %d]", spec.RingSize, MinRingSize, uint64(MaxRingSize))
	}
	if spec.SnapLen <= 0 || spec.SnapLen > MaxSnapLen {
		spec.SnapLen = MaxSnapLen
	}
	spec.Sockets = min(max(spec.Sockets, 0), MaxSockets)
	progs := len(spec.Filter) + len(spec.Trigger) + len(spec.Stop)
	progOff, sockOff, ringOff, size := Layout(progs, spec.Sockets, spec.RingSize)
	path := Path(spec.UID, spec.Pid, spec.Gen)
	mem, err := shmseg.Create(path, int(size))
	if err != nil {
		return nil, fmt.Errorf("create capture segment: %w", err)
	}
	if spec.UID != unix.Geteuid() {
		// root capturing another user's process: the file becomes that user's (still 0600).
		if err := unix.Chown(path, spec.UID, -1); err != nil {
			_ = shmseg.Unmap(mem)
			_ = shmseg.Unlink(path)
			return nil, fmt.Errorf("create capture segment %s: %w", path, err)
		}
	}
	hdr := shmseg.Words(mem[:HeaderSize])
	off := progOff
	for _, p := range [][]bpf.RawInstruction{spec.Filter, spec.Trigger, spec.Stop} {
		for _, r := range p {
			binary.NativeEndian.PutUint16(mem[off:], r.Op)
			mem[off+2], mem[off+3] = r.Jt, r.Jf
			binary.NativeEndian.PutUint32(mem[off+4:], r.K)
			off += 8
		}
	}
	h := [...]struct {
		i int
		v uint64
	}{
		{HVersion, Version}, {HSize, size}, {HToolPid, uint64(spec.ToolPid)}, {HToolStart, spec.ToolStart},
		{HSnapLen, uint64(spec.SnapLen)}, {HFlags, spec.Flags}, {HProgOff, progOff},
		{HFilterLen, uint64(len(spec.Filter))}, {HTriggerLen, uint64(len(spec.Trigger))}, {HStopLen, uint64(len(spec.Stop))},
		{HSockOff, sockOff}, {HSockCount, uint64(spec.Sockets)}, {HRingOff, ringOff}, {HRingSize, spec.RingSize},
		{HState, spec.State},
	}
	for _, w := range h {
		hdr[w.i] = w.v
	}
	atomic.StoreUint64(&hdr[HMagic], Magic)
	return &Segment{
		Path: path, mem: mem, hdr: hdr,
		socks:  shmseg.Words(mem[sockOff:ringOff])[:spec.Sockets*SockWords],
		Reader: NewReader(hdr, mem[ringOff:]),
	}, nil
}

// Counters are a capture's totals in one process.
type Counters struct {
	Seen, Matched, Captured, Dropped uint64
}

// Counters reads the totals the process published last.
func (g *Segment) Counters() Counters {
	return Counters{
		Seen: atomic.LoadUint64(&g.hdr[HSeen]), Matched: atomic.LoadUint64(&g.hdr[HMatched]),
		Captured: atomic.LoadUint64(&g.hdr[HCaptured]), Dropped: atomic.LoadUint64(&g.hdr[HDropped]),
	}
}

// Sockets returns the counters of every fd with any.
func (g *Segment) Sockets() map[int]Counters {
	out := map[int]Counters{}
	for fd := 0; (fd+1)*SockWords <= len(g.socks); fd++ {
		w := g.socks[fd*SockWords:]
		c := Counters{Seen: atomic.LoadUint64(&w[SSeen]), Matched: atomic.LoadUint64(&w[SMatched]),
			Captured: atomic.LoadUint64(&w[SCaptured]), Dropped: atomic.LoadUint64(&w[SDropped])}
		if c != (Counters{}) {
			out[fd] = c
		}
	}
	return out
}

// Attached reports whether the process mapped the segment.
func (g *Segment) Attached() bool { return atomic.LoadUint64(&g.hdr[HPid]) != 0 }

// State is the trigger state (TriggerNone, TriggerWaiting, TriggerFired, Stopped).
func (g *Segment) State() uint64 { return atomic.LoadUint64(&g.hdr[HState]) }

// SetState moves the trigger state forward (a trigger or stop seen in another process).
func (g *Segment) SetState(st uint64) {
	for {
		old := atomic.LoadUint64(&g.hdr[HState])
		if old >= st || atomic.CompareAndSwapUint64(&g.hdr[HState], old, st) {
			return
		}
	}
}

// Close unmaps and removes the segment (the process keeps its mapping until it detaches).
func (g *Segment) Close() error {
	err := shmseg.Unmap(g.mem)
	if e := shmseg.Unlink(g.Path); err == nil && e != nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("close capture segment %s: %w", g.Path, err)
	}
	return nil
}

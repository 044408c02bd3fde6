package stats

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/shmseg"
)

// ErrDisabled is returned by Create for an empty directory: statistics are
// turned off (VMA_STATS_SHMEM_DIR="").
var ErrDisabled = errors.New("stats disabled (empty VMA_STATS_SHMEM_DIR)")

// ErrNoSpace wraps the error of a segment that could not be allocated
// because its file system is full (ENOSPC, EDQUOT): the library runs without
// statistics. It is internal/shmseg's, which every segment of the library uses.
var ErrNoSpace = shmseg.ErrNoSpace

// Writer owns a process's segment. It is used from inside the host process:
// it holds no file descriptor after Create, starts no goroutine, uses no
// timer and no package os or net, only raw syscalls. All methods are safe
// for concurrent use and on a nil *Writer (they do nothing).
type Writer struct {
	path   string
	mem    []uint64
	hdr    []uint64
	geo    geometry
	closed atomic.Bool

	mu        sync.Mutex // slot allocation and every seqlocked metadata change
	freeSocks []int32    // free socket slots, used as a stack
	sockHigh  int        // one past the highest socket slot ever used
	ringUsed  [ringSlots]bool
	poolUsed  [poolSlots]bool
	epollUsed [epollSlots]bool
	nextID    uint64 // ring and pool numbers
	mcIndex   map[[16]byte]int

	finalFD atomic.Int64 // VMA_STATS_FILE descriptor, -1 = none

	cmdMu   sync.Mutex
	cmdSeen atomic.Uint64

	selectMux, pollMux *Iomux
	global             *Global

	// Scratch areas that closed handles count into (never shared).
	sockScratch  *[sockWords]uint64
	ringScratch  *[ringWords]uint64
	poolScratch  *[poolWords]uint64
	iomuxScratch *[iomuxWords]uint64
}

// Create makes the segment <dir>/goxiostat.<pid> with maxSockets socket slots
// (<= 0: DefaultMaxSockets; above MaxSocketsLimit: clamped), fills in the
// process information and publishes it. A stale file of the same name (a
// previous image of this pid before exec, or a dead process) is replaced.
// A full file system gives an error wrapping ErrNoSpace at creation, never a
// SIGBUS later: the space is reserved with fallocate.
func Create(dir string, maxSockets int, info ProcessInfo) (*Writer, error) {
	if dir == "" {
		return nil, ErrDisabled
	}
	if maxSockets <= 0 {
		maxSockets = DefaultMaxSockets
	}
	maxSockets = min(maxSockets, MaxSocketsLimit)
	if info.Pid == 0 {
		info.Pid = unix.Getpid()
	}
	if info.StartTime == 0 {
		st, err := selfStartTime()
		if err != nil {
			return nil, fmt.Errorf("create stats segment: %w", err)
		}
		info.StartTime = st
	}
	if info.Cmdline == nil {
		info.Cmdline = selfCmdline()
	}
	blob := encodeInfo(info)
	geo := newGeometry(maxSockets, (len(blob)+7)/8)
	path := strings.TrimRight(dir, "/") + "/" + FilePrefix + strconv.Itoa(info.Pid)
	if dir == "/" {
		path = "/" + FilePrefix + strconv.Itoa(info.Pid)
	}

	mem, err := createFile(path, geo.totalWords)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		path:         path,
		mem:          mem,
		hdr:          mem[:headerWords],
		geo:          geo,
		mcIndex:      make(map[[16]byte]int),
		sockScratch:  new([sockWords]uint64),
		ringScratch:  new([ringWords]uint64),
		poolScratch:  new([poolWords]uint64),
		iomuxScratch: new([iomuxWords]uint64),
	}
	w.finalFD.Store(-1)
	w.freeSocks = make([]int32, maxSockets)
	for i := range w.freeSocks {
		w.freeSocks[i] = int32(maxSockets - 1 - i) // pop gives slot 0 first
	}

	// The file is new and zero: plain stores are fine until the state word
	// publishes it (atomic store, after everything else).
	geo.writeHeader(w.hdr)
	w.hdr[hPid] = uint64(info.Pid)
	w.hdr[hStartTime] = info.StartTime
	w.hdr[hCreated] = uint64(time.Now().UnixNano())
	storeBytes(mem[geo.infoOff:geo.infoOff+geo.infoWords], blob)
	w.global = &Global{p: (*[globalWords]uint64)(mem[geo.globalOff : geo.globalOff+globalWords])}
	w.selectMux = w.initIomux(0, IomuxSelect, -1)
	w.pollMux = w.initIomux(1, IomuxPoll, -1)
	atomic.StoreUint64(&w.hdr[hVersion], LayoutVersion)
	atomic.StoreUint64(&w.hdr[hMagic], magic)
	atomic.StoreUint64(&w.hdr[hState], stateReady)
	return w, nil
}

// createFile creates path (0600, no symlink following; internal/shmseg), reserves words*8
// bytes and maps them shared. A stale file of the same name is replaced.
func createFile(path string, words int) ([]uint64, error) {
	if err := shmseg.Unlink(path); err != nil {
		return nil, fmt.Errorf("create stats segment: remove stale: %w", err)
	}
	mem, err := shmseg.Create(path, words*8)
	if err != nil {
		return nil, fmt.Errorf("create stats segment: %w", err)
	}
	return shmseg.Words(mem), nil
}

// Path returns the segment's file name.
func (w *Writer) Path() string {
	if w == nil {
		return ""
	}
	return w.path
}

// SetFinalFile sets the VMA_STATS_FILE descriptor: CloseSocket appends each
// socket's final counters to it. The engine opens it (O_WRONLY|O_APPEND|
// O_CREAT|O_CLOEXEC) and keeps ownership; -1 turns the feature off.
func (w *Writer) SetFinalFile(fd int) {
	if w == nil {
		return
	}
	w.finalFD.Store(int64(fd))
}

// Close is called from the library's exit path. It marks the segment closed,
// removes the file and replaces the shared mapping with private anonymous
// memory at the same address, so a thread still counting writes harmlessly.
// Handles keep working (into that memory); Open returns nil afterwards.
// Close is idempotent.
func (w *Writer) Close() error {
	if w == nil || w.closed.Swap(true) {
		return nil
	}
	atomic.StoreUint64(&w.hdr[hState], stateClosed)
	var errs []error
	if err := unix.Unlink(w.path); err != nil && err != unix.ENOENT {
		errs = append(errs, fmt.Errorf("close stats segment: unlink %s: %w", w.path, err))
	}
	if err := shmseg.Retire(shmseg.Bytes(w.mem)); err != nil {
		errs = append(errs, fmt.Errorf("close stats segment: %w", err))
	}
	return errors.Join(errs...)
}

// Global returns the process-wide block (nil for a nil Writer).
func (w *Writer) Global() *Global {
	if w == nil {
		return nil
	}
	return w.global
}

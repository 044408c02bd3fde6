package discovery

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/shmseg"
)

// Errors of the directory segment.
var (
	// ErrNoSpace wraps the error of a segment that could not be created
	// because its file system is full (ENOSPC, EDQUOT). It is internal/shmseg's,
	// which every segment of the library uses.
	ErrNoSpace = shmseg.ErrNoSpace
	// ErrIncompatible is returned by Open for a file that is not a
	// directory segment of this version, not owned by this user or readable
	// by others.
	ErrIncompatible = errors.New("incompatible discovery segment")
	// ErrDirFull is returned by Publish when every entry is taken by a live
	// process.
	ErrDirFull = errors.New("discovery table full")
	// ErrClosed is returned by Publish after Close.
	ErrClosed = errors.New("discovery segment closed")
)

// Dir is the directory segment `<dir>/goxio.<uid>.<netns>.dir` shared by all
// goxio processes of one user in one network namespace (netns = inode of
// /proc/self/ns/net): a fixed table of entries, each written only by its
// owning process (seqlock per entry: odd = being written), a generation
// counter bumped after every change.
//
// All methods are safe for concurrent use, except Close, which the caller
// calls when no other call on the Dir is in flight.
type Dir struct {
	path    string
	mem     []uint64
	entries int
	pid     int
	start   uint64
	closed  atomic.Bool
	hint    atomic.Uint32                // where Publish starts looking for a free slot
	ports   atomic.Pointer[portsSummary] // UDPPortFree's summary of the last generation it saw
}

// FileName returns the segment's file name for a user and a network
// namespace.
func FileName(uid int, netns uint64) string {
	return "goxio." + strconv.Itoa(uid) + "." + strconv.FormatUint(netns, 10) + ".dir"
}

// NetNS returns the network namespace of the calling thread's process: the
// inode number of /proc/self/ns/net.
func NetNS() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &st); err != nil {
		return 0, fmt.Errorf("network namespace: stat /proc/self/ns/net: %w", err)
	}
	return st.Ino, nil
}

// Open maps the directory segment of uid and netns in dir, creating it if it
// does not exist. Creation is race-free between processes: the segment is
// built complete in an unnamed (or temporary) file and linked into place, so
// an opener only ever sees a complete segment, and of two creators one link
// wins and the other opens the winner's file. The space is reserved with
// fallocate: a full file system gives an error wrapping ErrNoSpace here, not
// a SIGBUS later.
func Open(dir string, uid int, netns uint64) (*Dir, error) {
	start, err := selfStartTime()
	if err != nil {
		return nil, fmt.Errorf("open discovery segment: %w", err)
	}
	path := dir + "/" + FileName(uid, netns)
	for attempt := 0; attempt < 4; attempt++ {
		mem, err := openExisting(path)
		if err == nil {
			d := &Dir{path: path, mem: mem, entries: Entries, pid: unix.Getpid(), start: start}
			d.lowerHigh() // a mark left high by processes gone (high.go)
			return d, nil
		}
		if !errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("open discovery segment: %w", err)
		}
		err = create(dir, path, true)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("open discovery segment: %w", err)
		}
	}
	return nil, fmt.Errorf("open discovery segment %s: created and removed repeatedly", path)
}

// openExisting opens and maps an existing segment after checking that it is
// ours (a private regular file of our uid: internal/shmseg.Open) and of this
// version. ENOENT (wrapped) when there is none.
func openExisting(path string) ([]uint64, error) {
	words := segmentWords(Entries)
	b, err := shmseg.Open(path, words*8, words*8)
	if errors.Is(err, shmseg.ErrNotPrivate) || errors.Is(err, shmseg.ErrSize) {
		return nil, fmt.Errorf("%w: %w", ErrIncompatible, err)
	}
	if err != nil {
		return nil, err
	}
	mem := shmseg.Words(b)
	if atomic.LoadUint64(&mem[hMagic]) != magic ||
		atomic.LoadUint64(&mem[hVersion]) != version|entryWords<<32 ||
		atomic.LoadUint64(&mem[hEntries]) != Entries ||
		atomic.LoadUint64(&mem[hHeaderWords]) != headerWords {
		shmseg.Unmap(b)
		return nil, fmt.Errorf("%s: %w: unknown header", path, ErrIncompatible)
	}
	return mem, nil
}

// create builds a complete segment and links it at path (internal/shmseg.CreateLinked: an
// opener only ever sees a complete segment); an error wrapping EEXIST when another process
// linked one first. unnamed false forces the named temporary file (tests).
func create(dir, path string, unnamed bool) error {
	return shmseg.CreateLinked(dir, path, segmentWords(Entries)*8, unnamed, func(b []byte) {
		mem := shmseg.Words(b)
		atomic.StoreUint64(&mem[hVersion], version|entryWords<<32)
		atomic.StoreUint64(&mem[hEntries], Entries)
		atomic.StoreUint64(&mem[hHeaderWords], headerWords)
		atomic.StoreUint64(&mem[hMagic], magic)
	})
}

// Path returns the segment's file path.
func (d *Dir) Path() string { return d.path }

// Gen returns the generation counter: it changes after every Publish,
// Update, Withdraw and sweep of any process (after the change is visible),
// so a caller may cache Lookup results for as long as Gen returns the value
// it read before the Lookup. One atomic load.
func (d *Dir) Gen() uint64 {
	if d == nil || d.closed.Load() {
		return 0
	}
	return atomic.LoadUint64(&d.mem[hGen])
}

// bumpGen marks a change of the table.
func (d *Dir) bumpGen() { atomic.AddUint64(&d.mem[hGen], 1) }

// slot returns the words of entry i.
func (d *Dir) slot(i int) []uint64 {
	o := headerWords + i*entryWords
	return d.mem[o : o+entryWords : o+entryWords]
}

// high returns one past the highest slot ever claimed, bounded by the table.
func (d *Dir) high() int {
	return int(min(atomic.LoadUint64(&d.mem[hHigh]), uint64(d.entries)))
}

// Close unmaps the segment; the file stays for the other processes. Entries
// still published through d stay until they are swept after the process
// exits: withdraw them first. The caller makes sure no other call on d (or
// on its handles) is in flight; later calls do nothing.
func (d *Dir) Close() error {
	if d == nil || d.closed.Swap(true) {
		return nil
	}
	if err := shmseg.Unmap(shmseg.Bytes(d.mem)); err != nil {
		return fmt.Errorf("close discovery segment %s: %w", d.path, err)
	}
	return nil
}

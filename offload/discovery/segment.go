package discovery

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Errors of the directory segment.
var (
	// ErrNoSpace wraps the error of a segment that could not be created
	// because its file system is full (ENOSPC, EDQUOT).
	ErrNoSpace = errors.New("no space for the discovery segment")
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
	hint    atomic.Uint32 // where Publish starts looking for a free slot
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
			return &Dir{path: path, mem: mem, entries: Entries, pid: unix.Getpid(), start: start}, nil
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
// ours and of this version. ENOENT (wrapped) when there is none.
func openExisting(path string) ([]uint64, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("fstat %s: %w", path, err)
	}
	words := segmentWords(Entries)
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("%s: %w: not a regular file", path, ErrIncompatible)
	case st.Uid != uint32(unix.Geteuid()):
		return nil, fmt.Errorf("%s: %w: owned by uid %d", path, ErrIncompatible, st.Uid)
	case st.Mode&0o077 != 0:
		return nil, fmt.Errorf("%s: %w: mode %o open to others", path, ErrIncompatible, st.Mode&0o777)
	case st.Size != int64(words)*8:
		return nil, fmt.Errorf("%s: %w: size %d, want %d", path, ErrIncompatible, st.Size, words*8)
	}
	mem, err := mapShared(fd, words)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if atomic.LoadUint64(&mem[hMagic]) != magic ||
		atomic.LoadUint64(&mem[hVersion]) != version|entryWords<<32 ||
		atomic.LoadUint64(&mem[hEntries]) != Entries ||
		atomic.LoadUint64(&mem[hHeaderWords]) != headerWords {
		unmap(mem)
		return nil, fmt.Errorf("%s: %w: unknown header", path, ErrIncompatible)
	}
	return mem, nil
}

// create builds a complete segment and links it at path; an error wrapping
// EEXIST when another process linked one first. It builds it in an unnamed
// file (O_TMPFILE, which leaves nothing behind if we die half-way) when
// unnamed is set and the file system supports it, else in a named temporary
// file.
func create(dir, path string, unnamed bool) error {
	words := segmentWords(Entries)
	fd, err := -1, error(unix.EOPNOTSUPP)
	if unnamed {
		fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	}
	tmp := ""
	if err != nil {
		// File systems without O_TMPFILE: a named temporary file.
		tmp = path + "." + strconv.Itoa(unix.Getpid()) + ".tmp"
		unix.Unlink(tmp) // a leftover of a previous image of this pid
		fd, err = unix.Open(tmp, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return fmt.Errorf("create %s: %w", tmp, err)
		}
	}
	defer func() {
		unix.Close(fd)
		if tmp != "" {
			unix.Unlink(tmp)
		}
	}()
	if err := reserve(fd, int64(words)*8); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	mem, err := mapShared(fd, words)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	atomic.StoreUint64(&mem[hVersion], version|entryWords<<32)
	atomic.StoreUint64(&mem[hEntries], Entries)
	atomic.StoreUint64(&mem[hHeaderWords], headerWords)
	atomic.StoreUint64(&mem[hMagic], magic)
	if err := unmap(mem); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if tmp != "" {
		if err := unix.Link(tmp, path); err != nil {
			return fmt.Errorf("link %s: %w", path, err)
		}
		return nil
	}
	err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	return nil
}

// reserve allocates size bytes for fd so that a full file system is an
// error now, not a SIGBUS at the first store.
func reserve(fd int, size int64) error {
	var err error
	for {
		err = unix.Fallocate(fd, 0, 0, size)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == nil:
		return nil
	case err == unix.ENOSPC || err == unix.EDQUOT:
		return fmt.Errorf("fallocate %d bytes: %w: %w", size, ErrNoSpace, err)
	case err == unix.EOPNOTSUPP:
		// No fallocate on this file system: size the file; the pages are
		// then touched by the header writes and by use.
		if err := unix.Ftruncate(fd, size); err != nil {
			return fmt.Errorf("ftruncate %d bytes: %w", size, err)
		}
		return nil
	}
	return fmt.Errorf("fallocate %d bytes: %w", size, err)
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
	if err := unmap(d.mem); err != nil {
		return fmt.Errorf("close discovery segment %s: %w", d.path, err)
	}
	return nil
}

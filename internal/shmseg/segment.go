package shmseg

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Errors of segment creation and opening.
var (
	// ErrNoSpace wraps the error of a segment whose space could not be reserved because its
	// file system is full (ENOSPC, EDQUOT).
	ErrNoSpace = errors.New("no space for the segment")
	// ErrNotPrivate is returned by Open for a file that is not a regular file of our effective
	// uid closed to others.
	ErrNotPrivate = errors.New("not a private regular file of ours")
	// ErrSize is returned by Open for a file whose size is outside the bounds asked for.
	ErrSize = errors.New("segment size out of bounds")
)

// Create creates path exclusively (0600 whatever the umask, O_NOFOLLOW, O_CLOEXEC), reserves
// size bytes and maps them shared, read-write. An existing file is an error wrapping EEXIST
// (callers may retry another name); a full file system one wrapping ErrNoSpace. On any error
// nothing is left behind.
func Create(path string, size int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	mem, err := fill(fd, size)
	unix.Close(fd)
	if err != nil {
		unix.Unlink(path)
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return mem, nil
}

// CreateLinked builds a complete segment of size bytes and links it at path, so that an opener
// never sees it half-written: init writes its contents into the mapping before the link. The
// segment is built in an unnamed file (O_TMPFILE: nothing is left behind when the process dies
// half-way) or, on file systems without one (or with unnamed false: tests), in a named
// temporary file next to path. An error wrapping EEXIST means another process linked one first.
func CreateLinked(dir, path string, size int, unnamed bool, init func(mem []byte)) error {
	fd, err := -1, error(unix.EOPNOTSUPP)
	if unnamed {
		fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	}
	tmp := ""
	if err != nil {
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
	mem, err := fill(fd, size)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	init(mem)
	if err := Unmap(mem); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if tmp != "" {
		err = unix.Link(tmp, path)
	} else {
		err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	}
	if err != nil {
		return fmt.Errorf("link %s: %w", path, err)
	}
	return nil
}

// fill makes fd private to us, reserves size bytes and maps them.
func fill(fd, size int) ([]byte, error) {
	// The umask may have cleared bits we need; never more than 0600 anyway.
	if err := unix.Fchmod(fd, 0o600); err != nil {
		return nil, fmt.Errorf("fchmod: %w", err)
	}
	if err := reserve(fd, int64(size)); err != nil {
		return nil, err
	}
	return Map(fd, size, true)
}

// reserve allocates size bytes for fd so that a full file system is an error now, not a SIGBUS
// at the first store.
func reserve(fd int, size int64) error {
	var err error
	for {
		err = unix.Fallocate(fd, 0, 0, size)
		if err != unix.EINTR {
			break
		}
	}
	switch err {
	case nil:
		return nil
	case unix.ENOSPC, unix.EDQUOT:
		return fmt.Errorf("fallocate %d bytes: %w: %w", size, ErrNoSpace, err)
	case unix.EOPNOTSUPP, unix.ENOSYS:
		// No fallocate on this file system: size the file; pages come on first touch.
		if err := unix.Ftruncate(fd, size); err != nil {
			return fmt.Errorf("ftruncate %d bytes: %w", size, err)
		}
		return nil
	}
	return fmt.Errorf("fallocate %d bytes: %w", size, err)
}

// Open opens an existing segment written by another process of ours and maps it shared,
// read-write, after checking that it is a regular file of our effective uid closed to others
// (ErrNotPrivate) whose size is within [minSize, maxSize] (ErrSize). It returns the mapping of
// the whole file.
func Open(path string, minSize, maxSize int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("open %s: fstat: %w", path, err)
	}
	if !private(&st) {
		return nil, fmt.Errorf("open %s: %w", path, ErrNotPrivate)
	}
	if st.Size < int64(minSize) || st.Size > int64(maxSize) {
		return nil, fmt.Errorf("open %s: size %d outside [%d, %d]: %w", path, st.Size, minSize, maxSize, ErrSize)
	}
	mem, err := Map(fd, int(st.Size), true)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return mem, nil
}

// private reports whether st is a regular file of our effective uid closed to others.
func private(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFREG && int(st.Uid) == unix.Geteuid() && st.Mode&0o077 == 0
}

// Unlink removes a segment file; a file already gone is not an error.
func Unlink(path string) error {
	if err := unix.Unlink(path); err != nil && err != unix.ENOENT {
		return fmt.Errorf("unlink %s: %w", path, err)
	}
	return nil
}

// Join joins a directory and a segment name.
func Join(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// Names lists the names in dir; false when dir cannot be opened.
func Names(dir string) ([]string, bool) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	var names []string
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return names, true
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

package shm

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Segment files: created exclusively, 0600, O_CLOEXEC, no symlink following; space reserved with
// fallocate; mapped shared; the descriptor closed right after mmap.

// validName reports whether name can be a segment name in a directory: not empty, no slash, not
// a dot name, at most 63 bytes (the discovery table's limit).
func validName(name string) bool {
	return name != "" && len(name) <= 63 && name != "." && name != ".." &&
		!strings.ContainsAny(name, "/\x00")
}

// joinPath joins a directory and a segment name.
func joinPath(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// ringName is the file name of ring n of process pid sending to inbox.
func ringName(inbox string, pid int, n uint64) string {
	return inbox + "." + strconv.Itoa(pid) + "." + strconv.FormatUint(n, 10)
}

// createSegment creates path with size bytes reserved and maps it shared, read-write.
// EEXIST is returned unwrapped inside the error so callers can retry another name.
func createSegment(path string, size int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	fail := func(err error) ([]byte, error) {
		unix.Close(fd)
		unix.Unlink(path)
		return nil, err
	}
	// The umask may have cleared bits we need; never more than 0600 anyway.
	if err := unix.Fchmod(fd, 0o600); err != nil {
		return fail(fmt.Errorf("create %s: fchmod: %w", path, err))
	}
	for {
		err = unix.Fallocate(fd, 0, 0, int64(size))
		if err != unix.EINTR {
			break
		}
	}
	switch err {
	case nil:
	case unix.ENOSPC, unix.EDQUOT:
		return fail(fmt.Errorf("create %s (%d bytes): %w: %w", path, size, ErrNoSpace, err))
	case unix.EOPNOTSUPP, unix.ENOSYS:
		// No fallocate on this file system: size the file; pages come on first touch.
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			return fail(fmt.Errorf("create %s: ftruncate: %w", path, err))
		}
	default:
		return fail(fmt.Errorf("create %s: fallocate: %w", path, err))
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail(fmt.Errorf("create %s: mmap %d bytes: %w", path, size, err))
	}
	unix.Close(fd)
	return mem, nil
}

// openSegment opens an existing segment written by another process and maps it shared,
// read-write, after checking that it is a regular file owned by our effective uid, not
// accessible by others, whose size is within [minSize, maxSize]. It returns the mapping (of the
// whole file).
func openSegment(path string, minSize, maxSize int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("open %s: fstat: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != unix.Geteuid() || st.Mode&0o077 != 0 {
		return nil, fmt.Errorf("open %s: not a private regular file of ours: %w", path, ErrCorrupt)
	}
	if st.Size < int64(minSize) || st.Size > int64(maxSize) {
		return nil, fmt.Errorf("open %s: size %d outside [%d, %d]: %w", path, st.Size, minSize, maxSize, ErrCorrupt)
	}
	mem, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("open %s: mmap: %w", path, err)
	}
	return mem, nil
}

// unmap releases a mapping made by createSegment or openSegment (nil is fine).
func unmap(mem []byte) error {
	if mem == nil {
		return nil
	}
	if err := unix.Munmap(mem); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}

// unlink removes a segment file; a file already gone is not an error.
func unlink(path string) error {
	if err := unix.Unlink(path); err != nil && err != unix.ENOENT {
		return fmt.Errorf("unlink %s: %w", path, err)
	}
	return nil
}

// dirNames lists the names in dir with raw system calls (no os.File: it would start the Go
// netpoller inside the program); false when dir cannot be opened.
func dirNames(dir string) ([]string, bool) {
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

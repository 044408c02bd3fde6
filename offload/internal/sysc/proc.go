package sysc

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
)

// The engine's looks at /proc and at its own process, made with raw system calls: an os.File
// would start the Go runtime's netpoller (and place its descriptors where the program expects
// its own), and libc's calls are the library's own interposed ones.

// FDLink is the target of /proc/self/fd/<fd> ("anon_inode:[eventpoll]", "socket:[123]"); ""
// when fd is not open.
func FDLink(fd int) string {
	var buf [64]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil || n <= 0 {
		return ""
	}
	return string(buf[:n])
}

// Readlink is readlink(2) into buf; it returns the length of the target.
func Readlink(path string, buf []byte) (int, error) {
	n, err := unix.Readlink(path, buf)
	if err != nil {
		return 0, fmt.Errorf("readlink %s: %w", path, err)
	}
	return n, nil
}

// DirNames lists the names of directory path (getdents64, EINTR retried) and returns the
// number of the descriptor that read it (closed on return; a listing of /proc/self/fd shows it).
func DirNames(path string) (names []string, dirfd int, err error) {
	dirfd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, -1, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(dirfd)
	buf := make([]byte, 8<<10)
	for {
		n, err := unix.Getdents(dirfd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return names, dirfd, fmt.Errorf("getdents %s: %w", path, err)
		}
		if n <= 0 {
			return names, dirfd, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// ReadFile reads a small file (/proc) whole: again with a buffer twice as large while the
// file fills the buffer.
func ReadFile(path string) ([]byte, error) {
	buf := make([]byte, 16<<10)
	for {
		b, err := procstat.ReadPath(path, buf)
		if err != nil || len(b) < len(buf) {
			return b, err
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Open opens path with flags (O_CLOEXEC added).
func Open(path string, flags int) (int, error) {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", path, err)
	}
	return fd, nil
}

// Getppid is the parent process's id.
func Getppid() int { return unix.Getppid() }

// Getpid is the process's pid (a system call: glibc and Go cache nothing a fork would not
// change, and the engine runs in forked children).
func Getpid() int { return unix.Getpid() }

// Geteuid is the process's effective user id.
func Geteuid() int { return unix.Geteuid() }

// FileLimit is the soft limit on open descriptors (RLIMIT_NOFILE); ok false when unknown.
func FileLimit() (soft uint64, ok bool) {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 0, false
	}
	return rl.Cur, true
}

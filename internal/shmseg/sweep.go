package shmseg

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Sweeping: segments of processes that are gone, whatever way they ended (exit, _exit, a
// signal), are removed by the next process that looks. A segment's name may carry its owner's
// pid (a name whose pid no longer exists is removed without opening the file: one kill(2) per
// name, cheap enough for every process start); a pid alone can be reused, so a segment also
// records its owner's pid and start time in its header (internal/procstat tells a reused pid
// apart), which the caller's judge reads.

// Judge decides from a segment's name and the first bytes of its file (as many as the sweep
// asks for) whether the segment is left over and may be removed.
type Judge func(name string, header []byte) bool

// Sweeper says which segments of a directory a sweep looks at and how it judges them.
type Sweeper struct {
	// Prefix selects the names looked at.
	Prefix string
	// PID returns the owner pid a name carries, 0 when it carries none (nil: names carry none).
	// A name whose pid does not exist is removed without opening the file.
	PID func(name string) int
	// HeaderBytes (at most 4096) of each other file are read and given to Judge; nil Judge:
	// files whose name pid exists (or that carry none) are kept. Only private regular files of
	// ours (see Open) at least HeaderBytes long are judged; headers are read with pread, never
	// mapped, so a file truncated under us costs nothing.
	HeaderBytes int
	Judge       Judge
}

// Sweep removes the left-over segments of dir and returns how many it removed. Cost: one
// directory read and a kill(2) per matching name that carries a pid; with a Judge, an open,
// fstat and pread per other matching name plus what the judge does (typically a /proc read).
func (s Sweeper) Sweep(dir string) int {
	names, ok := Names(dir)
	if !ok {
		return 0
	}
	removed := 0
	var buf [4096]byte
	hdr := buf[:min(s.HeaderBytes, len(buf))]
	for _, name := range names {
		if !strings.HasPrefix(name, s.Prefix) {
			continue
		}
		path := Join(dir, name)
		gone := false
		if s.PID != nil {
			if pid := s.PID(name); pid > 0 {
				gone = unix.Kill(pid, 0) == unix.ESRCH
			}
		}
		if !gone && (s.Judge == nil || !ReadHeader(path, hdr) || !s.Judge(name, hdr)) {
			continue
		}
		if unix.Unlink(path) == nil {
			removed++
		}
	}
	return removed
}

// PIDField returns a Sweeper.PID that reads the pid in a name as the decimal number right after
// prefix, up to the next dot or the end (0 when there is none).
func PIDField(prefix string) func(name string) int {
	return func(name string) int {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			return 0
		}
		field, _, _ := strings.Cut(rest, ".")
		pid, err := strconv.Atoi(field)
		if err != nil || pid <= 0 || strconv.Itoa(pid) != field {
			return 0
		}
		return pid
	}
}

// ReadHeader fills hdr from the start of the segment at path, when path is a private regular
// file of ours (see Open) at least len(hdr) bytes long.
func ReadHeader(path string, hdr []byte) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || !private(&st) {
		return false
	}
	n, err := unix.Pread(fd, hdr, 0)
	return err == nil && n == len(hdr)
}

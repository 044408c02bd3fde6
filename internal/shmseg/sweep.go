package shmseg

import (
	"strings"

	"golang.org/x/sys/unix"
)

// Sweeping: segments of processes that are gone, whatever way they ended (exit, _exit, a
// signal), are removed by the next process that looks. A segment records its owner's pid and
// start time (internal/procstat tells a reused pid apart); the caller's judge reads them from
// the segment's header.

// Judge decides from a segment's name and the first bytes of its file (as many as asked for)
// whether the segment is left over and may be removed.
type Judge func(name string, header []byte) bool

// Sweep removes the segments in dir whose name starts with prefix and that judge declares left
// over; it returns how many it removed. Only private regular files of ours (see Open) at least
// headerBytes long are judged, and their header is read with pread (never mapped), so a file
// truncated under us costs nothing. Cost: one directory read, then an open, fstat and pread per
// matching name (plus what judge does, typically a /proc read): fine at start-up, not on a hot
// path. headerBytes is at most 4096.
func Sweep(dir, prefix string, headerBytes int, judge Judge) int {
	names, ok := Names(dir)
	if !ok {
		return 0
	}
	removed := 0
	var buf [4096]byte
	hdr := buf[:min(headerBytes, len(buf))]
	for _, name := range names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		path := Join(dir, name)
		if !ReadHeader(path, hdr) || !judge(name, hdr) {
			continue
		}
		if unix.Unlink(path) == nil {
			removed++
		}
	}
	return removed
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

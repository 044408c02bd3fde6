package stats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Finding segments: every goxiostat.<pid> file in a directory, whether its
// process still runs, and removing those whose process is gone.

// Entry is one segment file found in a directory.
type Entry struct {
	Pid  int    // from the file name
	Path string // full path
}

// List returns the segment files in dir, sorted by pid.
func List(dir string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list stats segments: %w", err)
	}
	var out []Entry
	for _, de := range des {
		name := de.Name()
		rest, ok := strings.CutPrefix(name, FilePrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(rest)
		if err != nil || pid <= 0 || strconv.Itoa(pid) != rest {
			continue
		}
		out = append(out, Entry{Pid: pid, Path: filepath.Join(dir, name)})
	}
	slices.SortFunc(out, func(a, b Entry) int { return a.Pid - b.Pid })
	return out, nil
}

// owner reads pid and start time from a segment's header with a plain read
// (no mapping). ok is false when the header cannot be read or is not a
// segment of this layout.
func owner(path string) (pid int, start uint64, ok bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var b [headerWords * 8]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return 0, 0, false
	}
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(b[i*8:]) }
	if word(hMagic) != magic || word(hVersion) != LayoutVersion {
		return 0, 0, false
	}
	return int(word(hPid)), word(hStartTime), true
}

// Alive reports whether the segment's process runs. It uses the pid and
// start time of the header when readable, so a reused pid is detected, and
// the pid of the file name otherwise.
func (e Entry) Alive() bool {
	pid, start, ok := owner(e.Path)
	if !ok || pid != e.Pid {
		return ProcessAlive(e.Pid, 0)
	}
	return ProcessAlive(pid, start)
}

// RemoveStale removes the segments in dir whose process is gone and returns
// their paths. Files it may not remove (another user's) are reported in the
// error; the others are still removed.
func RemoveStale(dir string) ([]string, error) {
	entries, err := List(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if e.Alive() {
			continue
		}
		if err := os.Remove(e.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove stale stats segment: %w", err))
			continue
		}
		removed = append(removed, e.Path)
	}
	return removed, errors.Join(errs...)
}

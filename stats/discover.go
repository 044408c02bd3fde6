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

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/shmseg"
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

// owner reads pid, start time and state from a segment's header with a
// plain read (no mapping). ok is false when the header cannot be read or is
// not a segment of this layout.
func owner(path string) (pid int, start, state uint64, ok bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, 0, 0, false
	}
	defer f.Close()
	var b [headerWords * 8]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return 0, 0, 0, false
	}
	return headerOwner(b[:])
}

// headerOwner reads pid, start time and state from a segment's header bytes; ok is false when
// they are not a header of this layout.
func headerOwner(b []byte) (pid int, start, state uint64, ok bool) {
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(b[i*8:]) }
	if len(b) < headerWords*8 || word(hMagic) != magic || word(hVersion) != LayoutVersion {
		return 0, 0, 0, false
	}
	return int(word(hPid)), word(hStartTime), word(hState), true
}

// ownerAlive reports whether the process that wrote a segment of file-name pid namePid (with a
// header of this layout: ok, pid, start, state) still runs. Without a readable header (another
// layout, still being created) only the pid of the file name is checked; a closed segment
// belongs to nobody; a pid that exists with another start time is a reused pid.
func ownerAlive(namePid int, pid int, start, state uint64, ok bool) bool {
	if !ok || pid != namePid {
		return ProcessAlive(namePid, 0)
	}
	return state != stateClosed && ProcessAlive(pid, start)
}

// Sweep removes the segments in dir of processes that are gone, whatever way they ended (exit,
// _exit, a signal): a file whose name's pid does not exist is removed at the cost of a kill(2);
// one whose pid exists is removed when its header names another start time (a reused pid) or
// says closed. Every engine runs it when it starts (before creating its own segment), so files
// of processes that never ran their exit path do not pile up; the reader's RemoveStale also
// checks the mappings of live processes. It returns how many files it removed.
func Sweep(dir string) int {
	if dir == "" {
		return 0
	}
	pidOf := shmseg.PIDField(FilePrefix)
	return shmseg.Sweeper{Prefix: FilePrefix, PID: pidOf, HeaderBytes: headerWords * 8,
		Judge: func(name string, hdr []byte) bool {
			pid, start, state, ok := headerOwner(hdr)
			return !ownerAlive(pidOf(name), pid, start, state, ok)
		}}.Sweep(dir)
}

// Alive reports whether the segment's process runs and still publishes in
// it. With a readable header it checks the pid and start time (a reused pid
// is not the owner) and that the process still maps the file (a process
// that exec'd a program without goxio keeps its pid and start time but
// dropped the mapping). Without a readable header (another layout, still
// being created) only the pid of the file name is checked.
func (e Entry) Alive() bool {
	pid, start, state, ok := owner(e.Path)
	if !ownerAlive(e.Pid, pid, start, state, ok) {
		return false
	}
	if !ok || pid != e.Pid || state != stateReady {
		return true
	}
	return mapsFile(pid, e.Path)
}

// mapsFile reports whether process pid maps the file at path, from
// /proc/PID/maps (device and inode). When that cannot be read (another
// user's process) it answers true: the process may well be publishing.
func mapsFile(pid int, path string) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil || len(b) == 0 {
		return true
	}
	dev := fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev))
	ino := strconv.FormatUint(st.Ino, 10)
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[4] == ino && f[3] == dev {
			return true
		}
	}
	return false
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

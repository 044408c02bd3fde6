package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goxio/goxio/stats"
)

// Finding the process to show and opening its segment, with the messages an
// operator needs when that fails.

// target is one process's opened segment.
type target struct {
	pid  int
	name string
	seg  *stats.Segment
}

// cleanStale removes segments of processes that are gone (unless -F) and
// says so on stderr.
func cleanStale(o *options, stderr *os.File) {
	if o.forbidClean {
		return
	}
	removed, err := stats.RemoveStale(o.dir)
	for _, p := range removed {
		fmt.Fprintf(stderr, "goxio_stats: removed %s: its process is gone\n", p)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "goxio_stats: %v\n", err)
	}
}

// programName returns the base name of a process's executable, or of its
// argv[0] when /proc/PID/exe is not readable.
func programName(pid int, cmdline []string) string {
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
		return filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	}
	if len(cmdline) > 0 {
		return filepath.Base(cmdline[0])
	}
	return "-"
}

// liveEntries lists the segments in o.dir whose process runs.
func liveEntries(o *options) ([]stats.Entry, error) {
	entries, err := stats.List(o.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("stats directory %s does not exist (set -k or VMA_STATS_SHMEM_DIR)", o.dir)
		}
		return nil, err
	}
	var live []stats.Entry
	for _, e := range entries {
		if e.Alive() {
			live = append(live, e)
		}
	}
	return live, nil
}

// choosePid resolves -p, -n or the default "find the process" into a pid.
func choosePid(o *options) (int, error) {
	if o.pid != 0 {
		path := filepath.Join(o.dir, stats.FilePrefix+strconv.Itoa(o.pid))
		_, err := os.Stat(path)
		switch {
		case err == nil:
			if !(stats.Entry{Pid: o.pid, Path: path}).Alive() {
				if stats.ProcessAlive(o.pid, 0) {
					return 0, fmt.Errorf("process %d no longer runs under goxio (it exec'd another program, or its pid "+
						"was reused); its stats segment %s is stale and kept because of -F", o.pid, path)
				}
				return 0, fmt.Errorf("process %d is gone (its stats segment %s is stale; it is kept because of -F)", o.pid, path)
			}
			return o.pid, nil
		case errors.Is(err, fs.ErrNotExist):
			if stats.ProcessAlive(o.pid, 0) {
				return 0, fmt.Errorf("process %d is not running under goxio: no stats segment %s "+
					"(is it started with LD_PRELOAD=libgoxio.so, and is VMA_STATS_SHMEM_DIR the same as -k?)", o.pid, path)
			}
			return 0, fmt.Errorf("process %d not found (no such process, no stats segment in %s)", o.pid, o.dir)
		default:
			return 0, fmt.Errorf("cannot look at %s: %w", path, err)
		}
	}
	live, err := liveEntries(o)
	if err != nil {
		return 0, err
	}
	var matches []stats.Entry
	for _, e := range live {
		if o.name == "" || programName(e.Pid, nil) == o.name {
			matches = append(matches, e)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0].Pid, nil
	case len(matches) == 0 && o.name != "":
		return 0, fmt.Errorf("no goxio process named %q found in %s", o.name, o.dir)
	case len(matches) == 0:
		return 0, fmt.Errorf("no goxio process found in %s (start the program with LD_PRELOAD=libgoxio.so; "+
			"use -k if VMA_STATS_SHMEM_DIR points elsewhere)", o.dir)
	}
	var list []string
	for _, e := range matches {
		list = append(list, fmt.Sprintf("%d (%s)", e.Pid, programName(e.Pid, nil)))
	}
	return 0, fmt.Errorf("several goxio processes found: %s; choose one with -p PID", strings.Join(list, ", "))
}

// openTarget opens the segment of pid, waiting briefly for one that is
// still being created, and explains failures.
func openTarget(o *options, pid int) (*target, error) {
	path := filepath.Join(o.dir, stats.FilePrefix+strconv.Itoa(pid))
	deadline := time.Now().Add(time.Second)
	for {
		seg, err := stats.OpenSegment(path)
		if err == nil {
			snapName := programName(pid, nil)
			return &target{pid: pid, name: snapName, seg: seg}, nil
		}
		if errors.Is(err, stats.ErrNotReady) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		return nil, explainOpen(path, pid, err)
	}
}

// explainOpen turns a segment open error into an operator's message.
func explainOpen(path string, pid int, err error) error {
	var le *stats.LayoutError
	switch {
	case errors.As(err, &le):
		return fmt.Errorf("layout version mismatch for process %d: %s has stats layout version %d, "+
			"this goxio_stats (%s) reads version %d; use the goxio_stats shipped with the process's libgoxio.so",
			pid, path, le.Got, versionString(), le.Want)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("permission denied reading %s: process %d belongs to another user; "+
			"run goxio_stats as that user or as root", path, pid)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("process %d is gone (no stats segment %s)", pid, path)
	case errors.Is(err, stats.ErrNotReady):
		return fmt.Errorf("process %d: stats segment %s is still being created; try again", pid, path)
	case errors.Is(err, stats.ErrTruncated), errors.Is(err, stats.ErrCorrupt), errors.Is(err, stats.ErrNotSegment):
		return fmt.Errorf("process %d: %w", pid, err)
	}
	return err
}

// openAll opens the segments of every live process (view 5, --serve). Those
// that cannot be opened are reported on stderr and skipped.
func openAll(o *options, stderr *os.File) ([]*target, error) {
	live, err := liveEntries(o)
	if err != nil {
		return nil, err
	}
	var out []*target
	for _, e := range live {
		if o.pid != 0 && e.Pid != o.pid {
			continue
		}
		t, err := openTarget(o, e.Pid)
		if err != nil {
			fmt.Fprintf(stderr, "goxio_stats: %v\n", err)
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

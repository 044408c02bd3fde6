package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
	"github.com/goxio/goxio/offload/capture"
	"github.com/goxio/goxio/stats"
)

// target is one captured process: its statistics segment (where the capture word is) and the
// capture segment made for it.
type target struct {
	pid  int
	name string
	st   *stats.Segment
	word *uint64
	gen  uint64
	seg  *capture.Segment
	done bool // detached
}

// genSeq numbers this tool's capture segments; a generation is the tool's pid and that number,
// so that a later tool can tell whether the capture word belongs to a tool that died.
var genSeq atomic.Uint64

// attach creates a capture segment for the process whose statistics segment is at path and
// stores its generation in the capture word.
func attach(o *captureOptions, pid int, path string, progs [3][]bpf.RawInstruction) (*target, error) {
	st, err := stats.OpenSegment(path)
	if err != nil {
		return nil, fmt.Errorf("attach to %d: %w", pid, err)
	}
	word, err := st.CaptureWord()
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("attach to %d: %w (run as the process's user or root)", pid, err)
	}
	old := atomic.LoadUint64(word)
	if old != 0 && procstat.Alive(int(old&^capture.Detach>>32), 0) {
		st.Close()
		return nil, fmt.Errorf("attach to %d: another goxio capture (pid %d) is attached", pid, old&^capture.Detach>>32)
	}
	var fi unix.Stat_t
	if err := unix.Stat(path, &fi); err != nil {
		st.Close()
		return nil, fmt.Errorf("attach to %d: %w", pid, err)
	}
	start, err := procstat.SelfStart()
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("attach to %d: %w", pid, err)
	}
	gen := uint64(os.Getpid())<<32 | genSeq.Add(1)
	state := uint64(capture.TriggerNone)
	if o.trigger != "" {
		state = capture.TriggerWaiting
	}
	var flags uint64
	if o.pre > 0 {
		flags |= capture.FlagPreTrigger
	}
	if o.dumpOS {
		flags |= capture.FlagDumpOS
	}
	seg, err := capture.Create(capture.Spec{
		Pid: pid, UID: int(fi.Uid), Gen: gen, ToolPid: os.Getpid(), ToolStart: start, SnapLen: o.snapLen(), Flags: flags, State: state,
		Filter: progs[0], Trigger: progs[1], Stop: progs[2], Sockets: o.sockets, RingSize: o.ringSize(),
	})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("attach to %d: %w", pid, err)
	}
	if !atomic.CompareAndSwapUint64(word, old, gen) {
		seg.Close()
		st.Close()
		return nil, fmt.Errorf("attach to %d: another goxio capture attached meanwhile", pid)
	}
	return &target{pid: pid, name: processName(pid), st: st, word: word, gen: gen, seg: seg}, nil
}

// detachAll asks every process to let its segment go, then waits a moment for them to say so
// (a process does at its next packet; an idle one keeps the mapping, whose file is gone, until
// then).
func detachAll(targets map[int]*target) {
	for _, t := range targets {
		if !t.done {
			t.done = true
			atomic.CompareAndSwapUint64(t.word, t.gen, t.gen|capture.Detach)
		}
	}
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		waiting := false
		for _, t := range targets {
			waiting = waiting || atomic.LoadUint64(t.word) == t.gen|capture.Detach && t.st.Alive()
		}
		if !waiting {
			return
		}
	}
}

// close removes the segment; call it after the last drain.
func (t *target) close() {
	_ = t.seg.Close()
	_ = t.st.Close()
}

// processName is a process's program name (/proc/PID/comm).
func processName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "-"
	}
	return strings.TrimSpace(string(b))
}

// matchesName reports whether a process is the program -n names: its comm, or the base name of
// its executable or argv[0].
func matchesName(pid int, name string) bool {
	if processName(pid) == name {
		return true
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && filepath.Base(strings.TrimSuffix(exe, " (deleted)")) == name {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return filepath.Base(argv0) == name
}

// candidates lists the live goxio processes that the options select.
func candidates(o *captureOptions) ([]stats.Entry, error) {
	entries, err := stats.List(o.dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && o.all {
			return nil, nil
		}
		return nil, err
	}
	var out []stats.Entry
	for _, e := range entries {
		if e.Pid == os.Getpid() || !e.Alive() {
			continue
		}
		switch {
		case o.all:
		case o.name != "":
			if !matchesName(e.Pid, o.name) {
				continue
			}
		default:
			found := false
			for _, p := range o.pids {
				found = found || p == e.Pid
			}
			if !found {
				continue
			}
		}
		out = append(out, e)
	}
	return out, nil
}

package stats

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// deadPid returns the pid of a process that ran and was reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if ProcessAlive(pid, 0) {
		t.Skipf("pid %d was reused at once", pid)
	}
	return pid
}

// liveSegment creates this process's segment in dir (closed at the end of the test) and returns
// it with a copy of its bytes.
func liveSegment(t *testing.T, dir string) (*Writer, []byte) {
	t.Helper()
	live, err := Create(dir, 4, ProcessInfo{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	good, err := os.ReadFile(live.Path())
	if err != nil {
		t.Fatal(err)
	}
	return live, good
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	live, good := liveSegment(t, dir)

	// A dead process's segment.
	dead := deadPid(t)
	b := append([]byte{}, good...)
	setWord(b, hPid, uint64(dead))
	deadPath := filepath.Join(dir, FilePrefix+strconv.Itoa(dead))
	if err := os.WriteFile(deadPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A segment whose pid runs but started at another time: reused pid.
	other := t.TempDir()
	b = append([]byte{}, good...)
	setWord(b, hStartTime, 12345)
	reusedPath := filepath.Join(other, FilePrefix+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(reusedPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Our own pid and start time, but not mapped by us: the state a
	// process leaves when it exec's a program without goxio.
	execd := t.TempDir()
	if err := os.WriteFile(filepath.Join(execd, FilePrefix+strconv.Itoa(os.Getpid())), good, 0o600); err != nil {
		t.Fatal(err)
	}
	// Not segments: left alone.
	for _, n := range []string{"goxiostat.abc", "goxiostat.", "other.1", "goxiostat.0012"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	entries, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("List found %v", entries)
	}
	removed, err := RemoveStale(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != deadPath {
		t.Fatalf("removed %v, want [%s]", removed, deadPath)
	}
	if _, err := os.Stat(live.Path()); err != nil {
		t.Fatalf("live segment removed: %v", err)
	}
	removed, err = RemoveStale(other)
	if err != nil || len(removed) != 1 {
		t.Fatalf("reused pid: removed %v err %v", removed, err)
	}
	removed, err = RemoveStale(execd)
	if err != nil || len(removed) != 1 {
		t.Fatalf("unmapped segment of a live pid: removed %v err %v", removed, err)
	}
	// A segment still being created (no magic yet) of a live pid is kept.
	creating := t.TempDir()
	if err := os.WriteFile(filepath.Join(creating, FilePrefix+strconv.Itoa(os.Getpid())), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if removed, _ := RemoveStale(creating); len(removed) != 0 {
		t.Fatalf("removed a segment being created: %v", removed)
	}
	if ProcessAlive(os.Getpid(), 1) {
		t.Errorf("ProcessAlive accepted a wrong start time")
	}
	st, _ := selfStartTime()
	if !ProcessAlive(os.Getpid(), st) {
		t.Errorf("ProcessAlive rejected our own start time")
	}
}

func TestParseStat(t *testing.T) {
	line := "1234 (a (weird) name) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 19 20\n"
	state, start, err := parseStat([]byte(line))
	if err != nil || state != 'S' || start != 777 {
		t.Fatalf("parseStat = %c %d %v", state, start, err)
	}
	for _, bad := range []string{"", "1234 (x", "1234 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 zz"} {
		if _, _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

// TestSweep: the start-up sweep removes the segments of dead processes (pid gone), of reused
// pids (another start time) and closed ones; it keeps live segments (even unmapped ones: the
// reader's RemoveStale judges those), segments being created and files that are not segments.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	live, good := liveSegment(t, dir)
	write := func(dir, name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := deadPid(t)
	b := append([]byte{}, good...)
	setWord(b, hPid, uint64(dead))
	deadPath := write(dir, FilePrefix+strconv.Itoa(dead), b)
	// A dead pid's file that is not (yet) a segment: the name's pid decides.
	deadRaw := write(dir, FilePrefix+strconv.Itoa(deadPid(t)), make([]byte, 100))
	for _, n := range []string{"goxiostat.abc", "goxiostat.", "other.1", "goxiostat.0012"} {
		write(dir, n, nil)
	}
	if n := Sweep(dir); n != 2 {
		t.Errorf("Sweep removed %d, want 2", n)
	}
	for _, p := range []string{deadPath, deadRaw} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left", p)
		}
	}
	if _, err := os.Stat(live.Path()); err != nil {
		t.Fatalf("live segment removed: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 5 {
		t.Errorf("left %d files, want 5 (the live segment and 4 non-segments)", len(ents))
	}

	self := FilePrefix + strconv.Itoa(os.Getpid())
	reused := t.TempDir()
	b = append([]byte{}, good...)
	setWord(b, hStartTime, 12345)
	write(reused, self, b)
	closed := t.TempDir()
	b = append([]byte{}, good...)
	setWord(b, hState, stateClosed)
	write(closed, self, b)
	creating := t.TempDir()
	write(creating, self, make([]byte, 4096))
	unmapped := t.TempDir()
	write(unmapped, self, good)
	for _, c := range []struct {
		dir  string
		want int
	}{{reused, 1}, {closed, 1}, {creating, 0}, {unmapped, 0}} {
		if n := Sweep(c.dir); n != c.want {
			t.Errorf("%s: Sweep removed %d, want %d", c.dir, n, c.want)
		}
	}
	if Sweep("") != 0 || Sweep(filepath.Join(dir, "missing")) != 0 {
		t.Error("Sweep of no directory removed something")
	}
}

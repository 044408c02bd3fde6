package shmseg

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCreateOpen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "seg")
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	mem, err := Create(path, 8192)
	if err != nil {
		t.Fatal(err)
	}
	Words(mem)[3] = 42
	if _, err := Create(path, 8192); !errors.Is(err, unix.EEXIST) {
		t.Errorf("second Create: %v, want EEXIST", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&0o777 != 0o600 || st.Size != 8192 {
		t.Fatalf("stat: %v mode %o size %d", err, st.Mode&0o777, st.Size)
	}
	other, err := Open(path, 4096, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if got := Words(other)[3]; got != 42 {
		t.Errorf("shared word: %d", got)
	}
	if err := Unmap(other); err != nil {
		t.Error(err)
	}
	if _, err := Open(path, 16384, 32768); !errors.Is(err, ErrSize) {
		t.Errorf("Open with a larger minimum: %v, want ErrSize", err)
	}
	if err := unix.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, 0, 8192); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("Open of a file open to others: %v, want ErrNotPrivate", err)
	}
	if err := Retire(mem); err != nil {
		t.Fatal(err)
	}
	Words(mem)[3] = 7 // private memory now: writing is harmless
	if err := Unlink(path); err != nil {
		t.Error(err)
	}
	if err := Unlink(path); err != nil {
		t.Errorf("Unlink of a missing file: %v", err)
	}
}

func TestCreateLinked(t *testing.T) {
	for _, unnamed := range []bool{true, false} {
		dir := t.TempDir()
		path := filepath.Join(dir, "linked")
		init := func(mem []byte) { Words(mem)[0] = 0x5e6 }
		if err := CreateLinked(dir, path, 4096, unnamed, init); err != nil {
			t.Fatal(err)
		}
		if err := CreateLinked(dir, path, 4096, unnamed, init); !errors.Is(err, unix.EEXIST) {
			t.Errorf("unnamed %v: second CreateLinked: %v, want EEXIST", unnamed, err)
		}
		mem, err := Open(path, 4096, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if Words(mem)[0] != 0x5e6 {
			t.Errorf("unnamed %v: contents not written before the link", unnamed)
		}
		Unmap(mem)
		if names, _ := Names(dir); len(names) != 1 {
			t.Errorf("unnamed %v: files left: %v", unnamed, names)
		}
	}
}

func TestSweep(t *testing.T) {
	dir := t.TempDir()
	dead := deadPID(t)
	names := []string{"x.dead", "x.live", "y.dead", "x.short", "x.1." + strconv.Itoa(dead), "x.1." + strconv.Itoa(unix.Getpid())}
	for _, n := range names {
		size := 4096
		if n == "x.short" {
			size = 8
		}
		mem, err := Create(filepath.Join(dir, n), size)
		if err != nil {
			t.Fatal(err)
		}
		copy(mem, n)
		Unmap(mem)
	}
	judged := 0
	s := Sweeper{Prefix: "x.", PID: PIDField("x.1."), HeaderBytes: 16, Judge: func(name string, hdr []byte) bool {
		judged++
		if string(hdr[:min(len(name), 16)]) != name[:min(len(name), 16)] {
			t.Errorf("%s: header %q", name, hdr)
		}
		return name == "x.dead"
	}}
	if removed := s.Sweep(dir); removed != 2 || judged != 3 {
		t.Errorf("removed %d judged %d, want 2 (x.dead, the dead pid's) and 3 (x.short is below the header size)", removed, judged)
	}
	left, _ := Names(dir)
	slices.Sort(left)
	want := []string{"x.1." + strconv.Itoa(unix.Getpid()), "x.live", "x.short", "y.dead"}
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("left: %v, want %v", left, want)
	}
	// Without a judge only the pid decides.
	if n := (Sweeper{Prefix: "x."}).Sweep(dir); n != 0 {
		t.Errorf("a sweep with neither PID nor Judge removed %d", n)
	}
}

// deadPID returns the pid of a child that has exited and been reaped.
func deadPID(t *testing.T) int {
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestPIDField(t *testing.T) {
	f := PIDField("p.")
	for name, want := range map[string]int{"p.12": 12, "p.12.3": 12, "p.012": 0, "p.x": 0, "q.12": 0, "p.": 0, "p.-3": 0} {
		if got := f(name); got != want {
			t.Errorf("%q: %d, want %d", name, got, want)
		}
	}
}

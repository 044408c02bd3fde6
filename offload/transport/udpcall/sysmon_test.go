package udpcall

import (
	"errors"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// TestQuietSysmon: the thread found is another thread of the process than the caller and the
// main thread, and it runs SCHED_IDLE afterwards while the caller's policy is unchanged; a second
// call finds the same thread; LoudSysmon gives it SCHED_NORMAL back and QuietSysmon then refuses.
// (One test: the state is the process's.)
func TestQuietSysmon(t *testing.T) {
	sysmon.mu.Lock()
	sysmon.loud = false // an earlier run of this test (-count) ended loud
	sysmon.mu.Unlock()
	tid, err := QuietSysmon()
	if err != nil {
		t.Fatal(err)
	}
	if tid == unix.Gettid() || tid == unix.Getpid() {
		t.Fatalf("QuietSysmon chose thread %d: the caller or the main thread", tid)
	}
	if p := policy(t, tid); p != unix.SCHED_IDLE {
		t.Fatalf("thread %d policy %d, want SCHED_IDLE (%d)", tid, p, unix.SCHED_IDLE)
	}
	if p := policy(t, 0); p != unix.SCHED_NORMAL {
		t.Fatalf("caller's policy became %d", p)
	}
	again, err := QuietSysmon()
	if err != nil || again != tid {
		t.Fatalf("second QuietSysmon = %d, %v; want %d", again, err, tid)
	}

	loud, err := LoudSysmon()
	if err != nil {
		t.Fatal(err)
	}
	if loud != tid {
		t.Fatalf("LoudSysmon changed thread %d, want %d", loud, tid)
	}
	if p := policy(t, tid); p != unix.SCHED_NORMAL {
		t.Fatalf("after LoudSysmon thread %d policy %d, want SCHED_NORMAL", tid, p)
	}
	if _, err := QuietSysmon(); !errors.Is(err, ErrSysmonLoud) {
		t.Fatalf("QuietSysmon after LoudSysmon: %v, want ErrSysmonLoud", err)
	}
	if p := policy(t, tid); p != unix.SCHED_NORMAL {
		t.Fatalf("QuietSysmon after LoudSysmon changed thread %d to policy %d", tid, p)
	}
	if again, err := LoudSysmon(); again != 0 || err != nil {
		t.Fatalf("second LoudSysmon = %d, %v; want 0, nil", again, err)
	}
}

func policy(t *testing.T, tid int) uint32 {
	t.Helper()
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatal(err)
	}
	return attr.Policy
}

// TestGoText: the mapping found holds this package's code and not the stack.
func TestGoText(t *testing.T) {
	lo, hi, err := goText()
	if err != nil {
		t.Fatal(err)
	}
	pc := reflect.ValueOf(parseSyscall).Pointer()
	if pc < lo || pc >= hi {
		t.Fatalf("parseSyscall at %#x outside the text found [%#x, %#x)", pc, lo, hi)
	}
	var local int
	if sp := reflect.ValueOf(&local).Pointer(); sp >= lo && sp < hi {
		t.Fatalf("a variable at %#x inside the text found [%#x, %#x)", sp, lo, hi)
	}
}

// TestParseSyscall: the number and the program counter of a blocked thread; nothing for a running
// thread or one outside a call.
func TestParseSyscall(t *testing.T) {
	for _, c := range []struct {
		line string
		nr   int
		pc   uintptr
		ok   bool
	}{
		{"35 0xc000057f28 0x0 0x0 0x0 0x0 0x0 0xc000057f10 0x46d1e3\n", 35, 0x46d1e3, true},
		{"230 0x0 0x0 0x7ffd6ca6fc80 0x7ffd6ca6fcc0 0x0 0x0 0x7ffd6ca6fc68 0x7f0b7aaa2503", 230, 0x7f0b7aaa2503, true},
		{"running\n", 0, 0, false},
		{"-1 0x7ffd6ca6fc68 0x7f0b7aaa2503\n", 0, 0, false},
		{"35 0x0 0x0 0x0 0x0 0x0 0x0 0x0 zz", 0, 0, false},
		{"", 0, 0, false},
	} {
		nr, pc, ok := parseSyscall([]byte(c.line))
		if nr != c.nr || pc != c.pc || ok != c.ok {
			t.Errorf("parseSyscall(%q) = %d, %#x, %v; want %d, %#x, %v", c.line, nr, pc, ok, c.nr, c.pc, c.ok)
		}
	}
}

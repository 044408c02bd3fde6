package udpcall

import (
	"errors"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeGuard records what QuietSysmon and LoudSysmon tell a Guard; Restorable returns refuse.
type fakeGuard struct {
	t          *testing.T
	refuse     error
	restorable []unix.SchedAttr
	guards     []int  // tids in call order
	idleAt     []bool // whether the guarded thread was already idle when told
}

func (g *fakeGuard) Restorable(former unix.SchedAttr) error {
	g.restorable = append(g.restorable, former)
	return g.refuse
}

func (g *fakeGuard) Guard(tid int, _ unix.SchedAttr, _ int64) {
	g.guards = append(g.guards, tid)
	if tid != 0 {
		g.idleAt = append(g.idleAt, policy(g.t, tid) == unix.SCHED_IDLE)
	}
}

// resetSysmon undoes an earlier QuietSysmon/LoudSysmon of this process (tests run with -count).
func resetSysmon(t *testing.T) {
	sysmon.mu.Lock()
	defer sysmon.mu.Unlock()
	if sysmon.tid != 0 {
		if err := setAttr(sysmon.tid, sysmon.former); err != nil {
			t.Fatal(err)
		}
		if sysmon.slack != 0 {
			if err := writeSlack(sysmon.tid, sysmon.slack); err != nil {
				t.Fatal(err)
			}
		}
	}
	sysmon.tid, sysmon.guard, sysmon.loud, sysmon.slack = 0, nil, false, 0
}

// TestQuietSysmon: the thread found is another thread of the process than the caller and the
// main thread, and it runs SCHED_IDLE afterwards while the caller's policy is unchanged; the
// guard is asked first with the thread's former class and told of the thread before it becomes
// idle; a second call finds the same thread; LoudSysmon gives it its former class back, tells
// the guard, and QuietSysmon then refuses. (One test: the state is the process's.)
func TestQuietSysmon(t *testing.T) {
	resetSysmon(t)
	g := &fakeGuard{t: t}
	tid, err := QuietSysmon(g)
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
	formerSlack, err := readSlack(unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	if SysmonSlackSet() {
		if s, err := readSlack(tid); err != nil || s != SysmonSlack {
			t.Fatalf("quiet monitor's timer slack %d, %v; want %d", s, err, int64(SysmonSlack))
		}
	} else if unix.Geteuid() == 0 {
		t.Fatalf("as root the quiet monitor's timer slack was not set")
	}
	if len(g.restorable) != 1 || g.restorable[0].Policy != unix.SCHED_NORMAL {
		t.Fatalf("Restorable calls %+v, want one with SCHED_NORMAL", g.restorable)
	}
	if len(g.guards) != 1 || g.guards[0] != tid || g.idleAt[0] {
		t.Fatalf("Guard calls %v (already idle: %v), want [%d] before the thread became idle", g.guards, g.idleAt, tid)
	}
	again, err := QuietSysmon(g)
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
	if s, err := readSlack(tid); err != nil || s != formerSlack {
		t.Fatalf("after LoudSysmon thread %d timer slack %d, %v; want %d (the caller's)", tid, s, err, formerSlack)
	}
	if len(g.guards) != 2 || g.guards[1] != 0 {
		t.Fatalf("Guard calls %v, want [%d 0]", g.guards, tid)
	}
	if _, err := QuietSysmon(g); !errors.Is(err, ErrSysmonLoud) {
		t.Fatalf("QuietSysmon after LoudSysmon: %v, want ErrSysmonLoud", err)
	}
	if p := policy(t, tid); p != unix.SCHED_NORMAL {
		t.Fatalf("QuietSysmon after LoudSysmon changed thread %d to policy %d", tid, p)
	}
	if again, err := LoudSysmon(); again != 0 || err != nil {
		t.Fatalf("second LoudSysmon = %d, %v; want 0, nil", again, err)
	}
}

// TestQuietSysmonNotRestorable: when the guard says an idle thread could not get its class back,
// QuietSysmon changes nothing, tells the guard of no thread, and says why.
func TestQuietSysmonNotRestorable(t *testing.T) {
	resetSysmon(t)
	g := &fakeGuard{t: t, refuse: unix.EPERM}
	tid, err := QuietSysmon(g)
	if !errors.Is(err, unix.EPERM) || tid != 0 {
		t.Fatalf("QuietSysmon = %d, %v; want 0 and an error wrapping EPERM", tid, err)
	}
	if len(g.restorable) != 1 || len(g.guards) != 0 {
		t.Fatalf("Restorable calls %d, Guard calls %v; want 1 and none", len(g.restorable), g.guards)
	}
	if idle := idleThreads(t); len(idle) != 0 {
		t.Fatalf("threads %v run SCHED_IDLE after a refused QuietSysmon", idle)
	}
}

// idleThreads lists the threads of this process that run SCHED_IDLE.
func idleThreads(t *testing.T) []int {
	t.Helper()
	fd, err := unix.Open("/proc/self/task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var names []string
	for {
		k, err := unix.Getdents(fd, buf[:])
		if err != nil || k <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:k], -1, names)
	}
	var idle []int
	for _, n := range names {
		var tid int
		for _, c := range n {
			tid = tid*10 + int(c-'0')
		}
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy == unix.SCHED_IDLE {
			idle = append(idle, tid)
		}
	}
	return idle
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

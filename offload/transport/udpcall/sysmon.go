package udpcall

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
)

// The Go runtime's monitor thread (sysmon) wakes up every 20 µs to 10 ms while any goroutine
// runs, and a thread that calls into the library from C counts as running all the time. Every
// 10 ms it also finds the calling thread's goroutine "running for too long" (its scheduler tick
// never advances: a cgo callback is not scheduled) and preempts it; when that catches the thread
// in C it takes its P, and then polls again every 20 µs for its next ~50 rounds. Measured under
// sockperf UDP ping-pong through rings on a 2-CPU VM: each process's sysmon woke ~500 times a
// second, each wake-up a timer interrupt plus a context switch that took a CPU from one of the
// two polling threads for ~10 µs, which made ~0.09% of the round trips 10-20 µs long (the tail
// that p99.9 measures). With SCHED_IDLE, sysmon still runs whenever a CPU has nothing else to do
// and gets a small share of a busy CPU, but its wake-ups no longer preempt the program's threads.

// sysmonScans bounds the search for the monitor thread: it is told apart by sleeping in
// nanosleep(2) (the runtime's usleep), which it does nearly all the time while the process runs
// Go code; sysmonGap is the pause between two looks.
const (
	sysmonScans = 100
	sysmonGap   = 100e3 // ns
	sysmonSeen  = 3     // looks in a row that must agree
)

// sysmon is the process-wide state of the monitor thread's scheduling class.
var sysmon struct {
	mu     sync.Mutex
	tid    int            // the thread given SCHED_IDLE, 0 while none is
	former unix.SchedAttr // its class before
	slack  int64          // its timer slack before, when QuietSysmon changed it to SysmonSlack; else 0
	guard  Guard          // told of tid and former while tid is set
	loud   bool           // LoudSysmon ran: the monitor keeps its normal priority for the process's life
}

// Guard confines the monitor's idle class to the monitor. Linux gives a new thread the class of
// its creator, and the monitor starts runtime threads; the cgo layer implements Guard
// (shim/sysmon.c): threads the idle monitor starts get its former class.
type Guard interface {
	// Restorable returns nil when a thread of this process may go from SCHED_IDLE back to the
	// class former (CAP_SYS_NICE, or an RLIMIT_NICE of at least 20 for SCHED_OTHER): without
	// that, neither the monitor (LoudSysmon) nor a thread it starts could get it back, and
	// QuietSysmon changes nothing.
	Restorable(former unix.SchedAttr) error
	// Guard is told the monitor's thread id, former class and former timer slack before the
	// monitor becomes idle, and tid 0 once it is back to that class: threads it starts meanwhile
	// get that class and slack.
	Guard(tid int, former unix.SchedAttr, formerSlack int64)
}

// ErrSysmonLoud is returned by QuietSysmon once LoudSysmon has run.
var ErrSysmonLoud = errors.New("quiet sysmon: the monitor thread keeps its normal priority (too many threads call into the library)")

// QuietSysmon gives the Go runtime's monitor thread of this process the SCHED_IDLE scheduling
// policy (its nice value kept) and returns its thread id. With a guard, it first checks that the
// class can be given back (g.Restorable) and tells g of the thread (g.Guard); a nil guard skips
// both (tests). It recognises the thread as the only one of the process, other than the main
// thread and the caller, found sleeping in nanosleep(2) called from the Go code's own text
// (never a thread of the program's, which sleeps through libc), in three looks in a row (100 µs
// apart, longer than any other sleep of the runtime's threads); when it cannot tell (no such
// thread, or several) it changes nothing and returns an error. A second call returns the
// thread found by the first; after LoudSysmon it returns ErrSysmonLoud.
func QuietSysmon(g Guard) (int, error) {
	sysmon.mu.Lock()
	defer sysmon.mu.Unlock()
	if sysmon.loud {
		return 0, ErrSysmonLoud
	}
	if sysmon.tid != 0 {
		return sysmon.tid, nil
	}
	lo, hi, err := goText()
	if err != nil {
		return 0, fmt.Errorf("quiet sysmon: %w", err)
	}
	self, main := unix.Gettid(), unix.Getpid()
	last, agree := -1, 0
	for i := 0; i < sysmonScans; i++ {
		if i > 0 {
			ts := unix.NsecToTimespec(sysmonGap)
			_ = unix.Nanosleep(&ts, nil)
		}
		tid, n := nanosleeper(self, main, lo, hi)
		if n != 1 {
			last, agree = -1, 0
			continue
		}
		if tid != last {
			last, agree = tid, 0
		}
		if agree++; agree == sysmonSeen {
			return quiet(tid, g)
		}
	}
	return 0, fmt.Errorf("quiet sysmon: the runtime's monitor thread not found among /proc/self/task")
}

// LoudSysmon gives the monitor thread back its former scheduling class, for good: QuietSysmon
// refuses afterwards. The caller decides when: an idle-class monitor starves on a saturated
// machine, and a program thread that calls into the library while every P is held by other
// threads waits for the monitor to take one back (seconds, measured with 48 threads on 2 busy
// CPUs and 32 Ps). It returns the thread it changed, 0 if none was quiet.
func LoudSysmon() (int, error) {
	sysmon.mu.Lock()
	defer sysmon.mu.Unlock()
	sysmon.loud = true
	tid := sysmon.tid
	if tid == 0 {
		return 0, nil
	}
	if err := setAttr(tid, sysmon.former); err != nil {
		return tid, fmt.Errorf("loud sysmon: %w", err)
	}
	if sysmon.slack != 0 {
		_ = writeSlack(tid, sysmon.slack) // it only delays the monitor's sleeps by up to SysmonSlack
		sysmon.slack = 0
	}
	sysmon.tid = 0
	sysmon.guard.Guard(0, sysmon.former, 0)
	return tid, nil
}

// noGuard is the Guard of a QuietSysmon given none (tests): everything restorable, nothing told.
type noGuard struct{}

func (noGuard) Restorable(unix.SchedAttr) error  { return nil }
func (noGuard) Guard(int, unix.SchedAttr, int64) {}

// SysmonSlackSet reports whether the quiet monitor thread got SysmonSlack as its timer slack
// (that needs CAP_SYS_NICE: without it only its class changed).
func SysmonSlackSet() bool {
	sysmon.mu.Lock()
	defer sysmon.mu.Unlock()
	return sysmon.slack != 0
}

// quiet gives thread tid SCHED_IDLE, with sysmon.mu held.
func quiet(tid int, g Guard) (int, error) {
	former, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, fmt.Errorf("quiet sysmon: sched_getattr %d: %w", tid, err)
	}
	if former.Policy == unix.SCHED_IDLE {
		return 0, fmt.Errorf("quiet sysmon: thread %d already runs SCHED_IDLE (the program's class)", tid)
	}
	if g == nil {
		g = noGuard{}
	}
	if err := g.Restorable(*former); err != nil {
		return 0, fmt.Errorf("quiet sysmon: an idle thread could not get the monitor's class back "+
			"(policy %d; CAP_SYS_NICE or RLIMIT_NICE >= 20 allows it): %w", former.Policy, err)
	}
	slack, err := readSlack(tid)
	if err != nil {
		slack = 0 // the class still changes
	}
	g.Guard(tid, *former, slack)
	idle := *former
	idle.Policy, idle.Priority = unix.SCHED_IDLE, 0
	if err := setAttr(tid, idle); err != nil {
		g.Guard(0, *former, 0)
		return 0, fmt.Errorf("quiet sysmon: %w", err)
	}
	sysmon.tid, sysmon.former, sysmon.guard, sysmon.slack = tid, *former, g, 0
	if slack != 0 && writeSlack(tid, SysmonSlack) == nil {
		sysmon.slack = slack
	}
	return tid, nil
}

// setAttr gives thread tid the scheduling attributes attr (size filled in).
func setAttr(tid int, attr unix.SchedAttr) error {
	attr.Size = unix.SizeofSchedAttr
	if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
		return fmt.Errorf("sched_setattr %d policy %d: %w", tid, attr.Policy, err)
	}
	return nil
}

// maxMaps bounds what goText reads of /proc/self/maps (a line is ~100 bytes).
const maxMaps = 16 << 20

// goText returns the bounds of the mapping of /proc/self/maps that holds this function's code:
// the Go code's text, runtime included (one text segment per executable or shared library).
func goText() (lo, hi uintptr, err error) {
	pc := reflect.ValueOf(goText).Pointer()
	maps, err := procstat.ReadFile("/proc/self/maps", maxMaps)
	if err != nil {
		return 0, 0, err
	}
	for len(maps) > 0 {
		var line []byte
		line, maps, _ = bytes.Cut(maps, []byte{'\n'})
		rng, _, _ := bytes.Cut(line, []byte{' '})
		a, b, ok := bytes.Cut(rng, []byte{'-'})
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(a), 16, 64)
		end, err2 := strconv.ParseUint(string(b), 16, 64)
		if err1 == nil && err2 == nil && uint64(pc) >= start && uint64(pc) < end {
			return uintptr(start), uintptr(end), nil
		}
	}
	return 0, 0, fmt.Errorf("the Go code's text (pc %#x) not found in /proc/self/maps", pc)
}

// nanosleeper looks at every thread of the process except self and main and returns one found
// in nanosleep(2) called from code in [lo, hi), and how many were.
func nanosleeper(self, main int, lo, hi uintptr) (tid, n int) {
	fd, err := unix.Open("/proc/self/task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var names []string
	for {
		k, err := unix.Getdents(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || k <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:k], -1, names)
	}
	for _, name := range names {
		t, err := strconv.Atoi(name)
		if err != nil || t == self || t == main {
			continue
		}
		if inNanosleep(fd, name, lo, hi) {
			tid = t
			n++
		}
	}
	return tid, n
}

// inNanosleep reports whether the thread whose /proc/self/task entry is name (relative to the
// open directory dir) is blocked in nanosleep(2) called from code in [lo, hi).
func inNanosleep(dir int, name string, lo, hi uintptr) bool {
	fd, err := unix.Openat(dir, name+"/syscall", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var b [256]byte
	k, err := unix.Read(fd, b[:])
	if err != nil || k <= 0 {
		return false
	}
	nr, pc, ok := parseSyscall(b[:k])
	return ok && nr == unix.SYS_NANOSLEEP && pc >= lo && pc < hi
}

// parseSyscall reads a /proc/<pid>/task/<tid>/syscall line of a thread blocked in a system call:
// the call's number, six arguments, the stack pointer and the program counter, all but the
// number in hex ("35 0x7ffd8a1c 0x0 0x0 0x0 0x0 0x0 0x7ffd8a10 0x46d1e3"). A running thread
// ("running") or one not in a call ("-1 0x... 0x...") gives ok false.
func parseSyscall(line []byte) (nr int, pc uintptr, ok bool) {
	f := bytes.Fields(line)
	if len(f) != 9 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(string(f[0]))
	if err != nil || n < 0 {
		return 0, 0, false
	}
	p, err := strconv.ParseUint(string(bytes.TrimPrefix(f[8], []byte("0x"))), 16, 64)
	if err != nil {
		return 0, 0, false
	}
	return n, uintptr(p), true
}

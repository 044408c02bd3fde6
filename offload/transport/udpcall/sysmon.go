package udpcall

import (
	"bytes"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
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

// QuietSysmon gives the Go runtime's monitor thread of this process the SCHED_IDLE scheduling
// policy (allowed without privileges: it only lowers the thread's priority) and returns its
// thread id. It recognises the thread as the only one of the process, other than the main
// thread and the caller, found sleeping in nanosleep(2) in three looks in a row (100 µs apart,
// longer than any other sleep of the runtime's threads); when it cannot
// tell (no such thread, or several) it changes nothing and returns an error.
func QuietSysmon() (int, error) {
	self, main := unix.Gettid(), unix.Getpid()
	last, agree := -1, 0
	for i := 0; i < sysmonScans; i++ {
		if i > 0 {
			ts := unix.NsecToTimespec(sysmonGap)
			_ = unix.Nanosleep(&ts, nil)
		}
		tid, n := nanosleeper(self, main)
		if n != 1 {
			last, agree = -1, 0
			continue
		}
		if tid != last {
			last, agree = tid, 0
		}
		if agree++; agree == sysmonSeen {
			attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
			if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
				return 0, fmt.Errorf("sched_setattr %d SCHED_IDLE: %w", tid, err)
			}
			return tid, nil
		}
	}
	return 0, fmt.Errorf("quiet sysmon: the runtime's monitor thread not found among /proc/self/task")
}

// nanosleeper looks at every thread of the process except self and main and returns one found
// in nanosleep(2) and how many were.
func nanosleeper(self, main int) (tid, n int) {
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
		if inNanosleep(fd, name) {
			tid = t
			n++
		}
	}
	return tid, n
}

// inNanosleep reports whether the thread whose /proc/self/task entry is name (relative to the
// open directory dir) is blocked in nanosleep(2): /proc/self/task/<tid>/syscall starts with the
// system call's number.
func inNanosleep(dir int, name string) bool {
	fd, err := unix.Openat(dir, name+"/syscall", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var b [32]byte
	k, err := unix.Read(fd, b[:])
	if err != nil || k <= 0 {
		return false
	}
	nr, _, _ := bytes.Cut(b[:k], []byte{' '})
	return string(nr) == strconv.Itoa(unix.SYS_NANOSLEEP)
}

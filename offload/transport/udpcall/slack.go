package udpcall

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goxio/goxio/internal/procstat"
	"golang.org/x/sys/unix"
)

// SysmonSlack is the timer slack the idle monitor thread gets (QuietSysmon): its sleeps of
// 20 µs to 10 ms then end at the next interrupt its CPU takes anyway (a scheduler tick, at most
// 10 ms apart at HZ=100) instead of with a timer interrupt of their own, which on a polling CPU
// of a virtual machine took 10-30 µs each (~100 a second per process under a ping-pong).
const SysmonSlack = 10e6 // ns

// readSlack returns thread tid's timer slack (/proc/<tid>/timerslack_ns).
func readSlack(tid int) (int64, error) {
	b, err := procstat.ReadFile(slackPath(tid), 64)
	if err != nil {
		return 0, fmt.Errorf("timer slack: %w", err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("timer slack of thread %d: %q", tid, b)
	}
	return v, nil
}

// writeSlack sets thread tid's timer slack; another thread's needs CAP_SYS_NICE.
func writeSlack(tid int, ns int64) error {
	fd, err := unix.Open(slackPath(tid), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("timer slack of thread %d: %w", tid, err)
	}
	defer unix.Close(fd)
	for {
		_, err = unix.Write(fd, []byte(strconv.FormatInt(ns, 10)))
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("timer slack of thread %d: %w", tid, err)
	}
	return nil
}

// slackPath is a thread's timer slack file: /proc/<tid>, not /proc/self/task/<tid>, has it.
func slackPath(tid int) string { return "/proc/" + strconv.Itoa(tid) + "/timerslack_ns" }

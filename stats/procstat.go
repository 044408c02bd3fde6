package stats

import (
	"bytes"

	"github.com/goxio/goxio/internal/procstat"
)

// Process identity: a pid alone can be reused, so a segment also records the
// process start time (clock ticks after boot, field 22 of /proc/PID/stat),
// and a segment is live only while a process with that pid and that start
// time exists.

// parseStat returns the state letter and start time from the contents of /proc/PID/stat.
func parseStat(b []byte) (state byte, start uint64, err error) { return procstat.Parse(b) }

// selfStartTime returns this process's start time.
func selfStartTime() (uint64, error) { return procstat.SelfStart() }

// selfCmdline returns this process's argv with raw syscalls.
func selfCmdline() []string {
	b, err := procstat.ReadFile("/proc/self/cmdline", 16<<10)
	if err != nil {
		return nil
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	var args []string
	for _, a := range bytes.Split(b, []byte{0}) {
		args = append(args, string(a))
	}
	return args
}

// ProcessAlive reports whether a process with this pid runs and, when start
// is not zero, started at that time (so a reused pid is not mistaken for the
// segment's owner). A zombie counts as gone.
func ProcessAlive(pid int, start uint64) bool { return procstat.Alive(pid, start) }

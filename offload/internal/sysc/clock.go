package sysc

import (
	"time"

	"golang.org/x/sys/unix"
)

var epoch = time.Now()

// Nanotime is the library's one monotonic clock, in nanoseconds since the library started (the
// vDSO clock only: no timers). Each process has its own start: a time that another process
// reads goes through Shared.
func Nanotime() int64 { return int64(time.Since(epoch)) }

// sharedEpoch is the library's start on the system's CLOCK_MONOTONIC, the clock Go's monotonic
// readings come from; read once (a system call: x/sys/unix has no vDSO path), to ~0.1 us.
var sharedEpoch = func() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0 // never on Linux; the times then stay comparable within the process only
	}
	return ts.Nano() - Nanotime()
}()

// Shared converts a Nanotime read to the system's CLOCK_MONOTONIC, which every process of the
// machine reads alike: the form of a time written to memory that other processes read.
func Shared(now int64) int64 { return now + sharedEpoch }

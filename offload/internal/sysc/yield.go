package sysc

import "golang.org/x/sys/unix"

// YieldAfter is how long a thread polls for data before it starts giving its CPU away between
// polls: a poller answers data that comes within this time at full speed, and one that waits
// longer lets the other runnable threads of a busy machine (the program's sender, the peer
// process) run instead of waiting for the end of its time slice.
const YieldAfter = 50e3 // ns

// YieldEvery is how many polls pass between two yields once YieldAfter has passed.
const YieldEvery = 16

// Yield gives the CPU to another runnable thread, if any (sched_yield).
func Yield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

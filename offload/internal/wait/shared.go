package wait

import (
	"sync/atomic"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// A CPU shared with another runnable thread. The crowd (crowd.go) is the machine's count of
// runnable threads against its CPUs; it says nothing of a process placed on some CPUs only
// (taskset, a cpuset), and nothing of two processes placed on one CPU that answer each other:
// each spinning wait then holds the one CPU the other needs to produce its data. Measured on
// the 2-CPU test machine, sockperf UDP ping-pong with both ends on CPU 0: 48.5 us average
// against the kernel's 8.7 us (TCP 339 us against 9.6 us), every hop one spinner's
// sysc.YieldAfter of full-speed polls before its first yield let the other run.
//
// A yield tells it: one that returns at once found nothing else to run on the CPU, one that
// took longer than sharedYield let another thread run meanwhile. After sharedYields such yields
// in a row the process's waits treat the CPU as shared for sharedTTL (every later slow yield
// extends it): they give the CPU away at every poll from their first and sleep after
// sysc.YieldAfter instead of spinning on, as on a crowded machine, so a thread that produces
// their data on the same CPU runs at once (the same ping-pongs: 3.8-4.6 us and 4.1-4.4 us). A
// receive also looks at its kernel socket at every poll then (Look.Shared): each poll is a
// yield already, and the datagram of a thread that shares the CPU without goxio is there when
// the yield returns.
//
// sharedYield is 1.5 us: a yield that let the peer of such a ping-pong run takes its two context
// switches and the peer's turn, 2-3 us here, and at 5 us most did not count, so the CPU stopped
// counting as shared whenever 1 ms went by without a longer one; the next wait then spun its
// sysc.YieldAfter before it yielded, and p99.9 of that ping-pong was 54 us in every run (the
// kernel's 28-36 us; with 1.5 us 23-35 us, 2026-12-01). A yield with nothing else to run
// returns within 1 us in 99.86% of 200,000 here (over 1.5 us: 0.05%, over 5 us: 0.035%), and
// two in a row are needed.
//
// Only a process placed on some CPUs only listens (placed): elsewhere the crowd decides, and the
// scheduler moves a thread that wants a CPU to an idle one; a slow yield there is as often a time
// slice given to a program's spinner that never yields (sockperf under-load's pacing loop), and
// in one interleaved series with every process listening, sockperf under-load's average went
// from 13-15 us to 15-97 us (this VM's under-load figures vary about as much between runs).
const (
	sharedYield  = 1.5e3 // ns
	sharedYields = 2
	sharedTTL    = 1e6 // ns
)

var shared struct {
	until  atomic.Int64 // sysc.Nanotime up to which the CPU counts as shared
	streak atomic.Int32 // slow yields in a row
}

// Shared reports whether the waits of this process found their CPU shared, as of now (a
// sysc.Nanotime read).
func Shared(now int64) bool { return now < shared.until.Load() }

// sharedNow is Shared for a caller without a clock read: none is made while the CPU never
// counted as shared (every process not placed, most placed ones).
func sharedNow() bool { return beforeNow(&shared.until) }

// beforeNow reports whether the clock has not reached *until yet, reading it only when *until
// was ever set (not 0).
func beforeNow(until *atomic.Int64) bool {
	u := until.Load()
	return u != 0 && sysc.Nanotime() < u
}

// placed reports whether the process may run on fewer CPUs than the machine has (the crowd's
// onlineCPUs is 0 then).
var placed = func() bool {
	_, p := cpuPlacement()
	return p
}

// timedYield gives the CPU away (yield) and reports whether the CPU counts as shared after it.
func timedYield() bool {
	if !placed() {
		yield()
		return false
	}
	t := sysc.Nanotime()
	yield()
	now := sysc.Nanotime()
	if now-t <= sharedYield {
		if shared.streak.Load() != 0 { // the line is shared by the waits: write it when it changes
			shared.streak.Store(0)
		}
		return now < shared.until.Load()
	}
	if shared.streak.Add(1) >= sharedYields {
		shared.until.Store(now + sharedTTL)
		return true
	}
	return now < shared.until.Load()
}

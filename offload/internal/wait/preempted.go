package wait

import "sync/atomic"

// A spinner preempted. Two threads that never sleep on one CPU (a goxio receive that spins and
// a program's own busy loop, sockperf under-load's pacing sender) share it by time slices of a
// millisecond or more, while the machine's other CPU may sit idle: the crowd (crowd.go) sees two
// runnable threads for two CPUs, and the scheduler moves neither (the running one cannot move,
// the waiting one ran too recently). Every datagram that comes while the receive waits for its
// slice waits with it. Measured on the 2-CPU test machine, traced with sched_switch: a sockperf
// under-load server preempted 7-28 times a run for more than 500 us by the client's sender,
// which is most of the replies above the kernel's p99.9.
//
// A spin sees it as a gap between two of its clock reads (taken every sysc.YieldEvery polls, a
// microsecond or two apart) longer than preemptGap: the spin ends and the wait sleeps, and the
// process's waits do not spin for preemptCold after it: each sleeps at once, as the kernel's
// receiver does, and is woken by its data. Its CPU goes to the thread that preempted it, and a
// wake-up places the sleeper on an idle CPU when the machine has one; one woken onto the busy
// CPU runs at once (a sleeper's wake-up preempts) and sleeps again instead of waiting a slice.
// Spinning comes back after preemptCold, and with it the next preemption if the CPU is still
// shared: one slice every preemptCold at worst.

// preemptGap is the gap between two clock reads of a spin that means it was preempted: longer
// than the few tens of microseconds a thread it woke onto its CPU runs (the crowd's yield), well
// short of a time slice.
const preemptGap = 200e3 // ns

// gapLimit is preemptGap; a variable for the tests, whose spins a loaded machine may preempt
// (their sequences of polls and sleeps are fixed).
var gapLimit = int64(preemptGap)

// preemptCold is how long the waits of a process do not spin after one of them was preempted.
const preemptCold = 2e6 // ns

// preempts counts the spins ended by a preemption (for the tests); coldUntil is the
// sysc.Nanotime up to which the waits do not spin.
var (
	preempts  atomic.Int64
	coldUntil atomic.Int64
)

// cold reports whether the waits of this process do not spin as of now (a sysc.Nanotime read).
func cold(now int64) bool { return now < coldUntil.Load() }

// coldNow is cold for a caller without a clock read: none is made while no wait was preempted.
func coldNow() bool { return beforeNow(&coldUntil) }

// preempted reports whether the spin lost its CPU for a time slice since its last clock read,
// and takes now as its last one.
func (s *Spin) preempted(now int64) bool {
	gap := s.last != 0 && now-s.last > gapLimit
	s.last = now
	if gap {
		preempts.Add(1)
		coldUntil.Store(now + preemptCold)
	}
	return gap
}

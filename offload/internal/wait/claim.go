package wait

import (
	"sync/atomic"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// Claimed CPUs. A receive whose data comes every few hundred microseconds does not spin (its
// waits are longer than a spin is worth: Avg.SpinWorth) and sleeps in the kernel, so the crowd's
// runnable count (crowd.go) does not see it; yet it wants a CPU that often. When the other threads
// fill the CPUs, each of its wake-ups waits for one: sockperf under-load with default parameters
// is that case (the client's sender paces by spinning, the server's receive spins, and the
// client's replies receiver wakes every 200 us to the server's CPU, where the spinner yields to
// it, or hands the CPU to the pacing sender for a time slice; ftrace of the millisecond replies).
//
// So such a receive (Policy.Claim: Avg.Claims) that goes to sleep while the runnable threads and
// the held waits fill the CPUs counts as a held wait (held.go) while it sleeps: the other waits see
// one thread more than the CPUs and sleep too, as the kernel's receivers do, and every sleeper
// wakes to the CPU they leave idle. A claim ends when the sleep does, or claimLasts after it began,
// whichever is first: a receive whose data stops (a feed that goes quiet for the night) must not
// keep the spinners of the machine asleep while it sleeps on. The readers age the claims (the table
// keeps each process's count of claims under way and the start of its last one): the sleeper is not
// woken to end its claim, since bounding each claimed sleep (a 1 ms timeout, then a new look) cost
// the receiver 4-6 us at the median per wake-up. Measured on the 2-CPU test machine, sockperf
// under-load (50,000 msg/s, a reply every 10), interleaved runs: p99.9 ~740 us (median of 8;
// 430-1,270) against the kernel's ~1,420 (770-1,700) and ~1,420 without the claim; average ~15.7 us
// against the kernel's ~18.7 (p50 ~12 us, as the kernel's: without the claim the average is lower,
// 8-20 us, and the tail longer); UDP ping-pong and throughput unchanged (their waits spin).

// filled reports whether the machine's runnable threads and the held waits of the user's goxio
// processes are as many as its CPUs, or more; false when the count is unknown, or the CPUs (a
// process placed on some CPUs only: onlineCPUs). now is a sysc.Nanotime read.
func filled(now int64) bool {
	cpus := onlineCPUs()
	if cpus == 0 {
		return false
	}
	n, ok := runnable()
	return ok && n+heldNow(now) >= cpus
}

// claimLasts is how long a claim counts at most: longer than a scheduler tick (4 ms at most
// here), the longest a woken sleeper waited for a CPU in the traces, and 13 times claimWorth.
const claimLasts = 4e6 // ns

// A slot's claims word (heldClaims): the count of claims under way in its low claimCountBits,
// above them the start of the last one in microseconds of the clock every process reads alike
// (sysc.Shared; 2^48 us: 8.9 years of uptime).
const (
	claimCountBits = 16
	claimCountMask = 1<<claimCountBits - 1
)

// claimClock is a Nanotime read (now) in the claims word's unit: microseconds of sysc.Shared.
func claimClock(now int64) int64 { return sysc.Shared(now) / 1e3 }

// claimsAt is the count of claims a claims word holds at at (a claimClock reading): none once
// claimLasts has passed since the last one began (a process with several claimants counts them
// all until then).
func claimsAt(w uint64, at int64) int {
	c := int(w & claimCountMask)
	if c == 0 || at-int64(w>>claimCountBits) >= claimLasts/1e3 {
		return 0
	}
	return c
}

// claimEnter counts a claim begun at now (a sysc.Nanotime read) in this process's slot; it
// returns the slot to give claimLeave (-1: nothing counted).
func claimEnter(now int64) int {
	i, sl := enterSlot()
	if sl == nil {
		return -1
	}
	start := uint64(claimClock(now)) << claimCountBits
	for {
		old := atomic.LoadUint64(&sl[heldClaims])
		c := old & claimCountMask
		if c == claimCountMask {
			return -1
		}
		if atomic.CompareAndSwapUint64(&sl[heldClaims], old, start|(c+1)) {
			return i
		}
	}
}

// claimLeave ends a claim (i from claimEnter), keeping the last start.
func claimLeave(i int) {
	sl := leaveSlot(i)
	if sl == nil {
		return
	}
	for {
		old := atomic.LoadUint64(&sl[heldClaims])
		if old&claimCountMask == 0 || atomic.CompareAndSwapUint64(&sl[heldClaims], old, old-1) {
			return
		}
	}
}

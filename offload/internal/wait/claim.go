package wait

// Claimed CPUs. A receive whose data comes every few hundred microseconds does not spin (its
// waits are longer than a spin is worth: Avg.SpinWorth) and sleeps in the kernel, so the crowd's
// runnable count (crowd.go) does not see it; yet it wants a CPU that often. When the other threads
// fill the CPUs, each of its wake-ups waits for one: sockperf under-load with default parameters
// is that case (the client's sender paces by spinning, the server's receive spins, and the
// client's replies receiver wakes every 200 us to the server's CPU, where the spinner yields to
// it, or hands the CPU to the pacing sender for a time slice; ftrace of the millisecond replies).
//
// So such a receive (Policy.Claim: Avg.Claims) that goes to sleep while the
// runnable threads and the held waits fill the CPUs counts as a held wait (held.go) while it
// sleeps: the other waits see one thread more than the CPUs and sleep too, as the kernel's
// receivers do, and every sleeper wakes to the CPU they leave idle. A claim lasts as long as the
// sleep: a thread whose waits grow long stops claiming at its next sleep (Avg.Claims), not
// during the one under way. Bounding each claimed sleep (a 1 ms timeout, then a new look) cost
// the receiver 4-6 us at the median per wake-up, so none is. Measured on the 2-CPU test machine,
// sockperf under-load (50,000 msg/s, a reply every 10), interleaved runs: p99.9 ~740 us (median of
// 8; 430-1,270) against the kernel's ~1,420 (770-1,700) and ~1,420 without the claim; average
// ~15.7 us against the kernel's ~18.7 (p50 ~12 us, as the kernel's: without the claim the
// average is lower, 8-20 us, and the tail longer); UDP ping-pong and throughput unchanged (their
// waits spin).

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

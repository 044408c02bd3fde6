package wait

import "sync/atomic"

// Handing the CPU over. A datagram sent through a kernel socket to a local receiver that sleeps
// in the kernel is a synchronous wake-up: the kernel expects the waker to sleep next and puts the
// woken thread on the waker's CPU, even when the other CPU is idle. A kernel socket's server does
// sleep next; a goxio receive spins instead, and the woken thread waits on that CPU for the
// spinner's yields (sysc.YieldAfter of full-speed polls first). Measured with a UDP socket per
// request against a goxio server (tests/bench/churn.c, the answer goes through the kernel to a
// socket that has no inbox), both ends on one CPU: 2.5x the kernel's p50 per round, 1.5x with a
// yield at the first poll of the spin after such a send; unpinned p99 2.6x -> 1.8x.
//
// So the first poll of the next spin after a kernel send (the engine's, or one of the preload
// library's sends that skip the engine: UseHandoffWord) gives the CPU away once: a thread woken
// onto this CPU runs now, and with nothing else runnable there the yield returns at once (one
// system call). A doorbell does not count here: its sleeper is the receive of a ring socket whose
// peer may pace by spinning (sockperf under-load), and an unconditional yield to that spinner cost
// the answering server a time slice (p99.9 about 2x worse in interleaved runs); a doorbell makes
// the next spin look at the crowd instead, and yield only when the woken thread has no CPU
// (crowd.go).

// handoff: a thread of this process sent through the kernel since the last spin began;
// handoffWord: the same for the sends that skip the engine (UseHandoffWord), set elsewhere.
var (
	handoff     atomic.Bool
	handoffWord atomic.Pointer[atomic.Uint32]
)

// UseHandoffWord makes the spins take w too: a word not 0 is a kernel send made without the
// engine (the preload library's), which they set back to 0.
func UseHandoffWord(w *atomic.Uint32) { handoffWord.Store(w) }

// Handoff tells that this process just sent a datagram through the kernel, which may have woken a
// thread onto this CPU: the next spin yields at its first poll.
func Handoff() {
	if !handoff.Load() { // the line is shared by the senders: write it only when it changes
		handoff.Store(true)
	}
}

// tookHandoff reports, and clears, a Handoff since the last spin began.
func tookHandoff() bool {
	took := handoff.Load() && handoff.Swap(false)
	if w := handoffWord.Load(); w != nil && w.Load() != 0 && w.Swap(0) != 0 {
		took = true
	}
	return took
}

package wait

import (
	"sync/atomic"

	"github.com/goxio/goxio/offload/internal/sysc"
)

// spinWorth is the typical wait beyond which a blocking receive stops spinning before it sleeps
// (unless VMA_RX_POLL is -1): data that keeps coming this late is not worth a CPU held busy all
// that time (the wake-up costs a few microseconds), and on a machine with few CPUs the spinning
// would take them from the threads that produce the data. Once the waits get shorter again, the
// receive spins again. The typical wait is a moving average (1/16 per wait) of waits capped at
// 4 x spinWorth, so a lone long wait (the peer was descheduled) does not stop the spinning.
const spinWorth = 100e3 // ns

// Avg is how long a socket's blocking receives typically wait for their data. The zero value is
// ready (no wait yet: spinning is worth it).
type Avg struct{ ns atomic.Int64 }

// Waited folds how long the blocking receive of w waited into the average; receives that found
// data at once (w not started) do not count.
func (a *Avg) Waited(w *Call) {
	if !w.Started {
		return
	}
	d := min(sysc.Nanotime()-w.Begin, 4*spinWorth)
	old := a.ns.Load()
	a.ns.Store(old + (d-old)/16)
}

// lookWorth is the typical wait from which a receive looks at the crowd when it starts
// spinning (Policy.Look): a ping-pong's waits are shorter.
const lookWorth = 5e3 // ns

// Long reports whether the socket's receives typically wait long enough for a look at the crowd
// when they start spinning to cost nothing that matters.
func (a *Avg) Long() bool { return a.ns.Load() >= lookWorth }

// SpinWorth reports whether a blocking receive should spin before it sleeps.
func (a *Avg) SpinWorth() bool { return a.ns.Load() < spinWorth }

// claimWorth is the typical wait under which a receive that does not spin still wants a CPU
// often enough to claim one while it sleeps (Policy.Claim, claim.go). The average is capped at
// 4 x spinWorth, where a thread that waits for seconds sits.
const claimWorth = 300e3 // ns

// Claims reports whether the socket's blocking receives do not spin (SpinWorth is false) yet
// wake often enough to count as wanting a CPU while they sleep (Policy.Claim): one read of the
// average for both.
func (a *Avg) Claims() bool {
	ns := a.ns.Load()
	return ns >= spinWorth && ns < claimWorth
}

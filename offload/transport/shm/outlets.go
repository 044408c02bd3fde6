package shm

// Outlets towards inboxes that are gone. An outlet holds two mappings (the inbox's header and
// our ring); when the inbox's socket closes, only a later send to that inbox used to notice and
// drop it, so a server answering a new client socket per request kept every one of them mapped
// (two mappings and a ring's worth of /dev/shm per request, for the process's life). The
// outlets are swept whenever their number doubled since the last sweep: amortized, a constant
// number of checks (one lock and three loads each) per outlet opened.

// minOutletSweep is the number of outlets below which none is swept.
const minOutletSweep = 4

// sweepOutletsLocked drops the outlets whose inbox was closed or detached our ring, when there
// are twice as many outlets as after the last sweep; e.mu is held.
func (e *Env) sweepOutletsLocked() {
	if len(e.outlets) < max(minOutletSweep, 2*e.outletsKept) {
		return
	}
	for name, o := range e.outlets {
		if o.Closed() {
			e.dropOutletLocked(name, o)
		}
	}
	e.outletsKept = len(e.outlets)
}

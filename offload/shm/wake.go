package shm

import "sync/atomic"

// The wake protocol. Two words of the inbox header: spinners (receiver threads polling this
// inbox) and wakePending (1 from the moment a sender decided to send a wake datagram until the
// receiver read it and called ClearWake). Every access is a sequentially consistent atomic.
//
// Sender, after publishing its tail (Send):
//
//	if spinners == 0 && CAS(wakePending, 0, 1) { send the wake datagram }
//
// Receiver: SpinBegin; poll; SpinEnd; if Pending { poll again } else { sleep in the kernel };
// on a wake datagram: ClearWake; then Pending.
//
// No lost wake-up: in the single order of all these operations, either the sender's tail store
// comes before the receiver's Pending (the receiver sees the data and does not sleep), or the
// receiver's SpinEnd comes before the sender's spinners load (the sender sees no spinner); then
// either its CAS succeeds (a wake datagram is sent), or wakePending was already 1: a wake
// datagram is on its way and the receiver, after reading it, clears the flag and calls Pending,
// which comes after our tail store (the CAS that failed read the 1 before the clear).
// At most one wake datagram per inbox is in flight at any time.
//
// The argument needs the single order: a side's store must be visible before its next load of
// the other side's word (the store-buffer, or Dekker, case). Go promises that of sync/atomic,
// but under the race detector an atomic on memory outside the Go heap, which our mappings are,
// is a plain store or a plain load on amd64, and the processor lets the load pass the store:
// the sender saw a spinner while the receiver, after SpinEnd, did not see the tail yet, and
// nobody woke the receiver (in the race-detector stress runs only, but those must hold too).
// So every store that such a load follows is a read-modify-write (Swap, Add, CompareAndSwap):
// a full barrier in every build, at the cost of a Store on amd64 (also an exchange there).
// Plain stores remain only where nothing of the other side is loaded next.
// wake_order_test.go checks each pair.

// needWake is the sender's half, called after publishing. sleepers, when not nil, counts reader
// threads asleep in the kernel that registered (stream_wake.go): they get their wake-up whatever
// the spinners.
func needWake(spinners, sleepers *int32, wakePending *uint32) bool {
	// A negative count (a peer scribbled on it) means nobody spins, or nobody sleeps.
	if atomic.LoadInt32(spinners) > 0 && (sleepers == nil || atomic.LoadInt32(sleepers) <= 0) {
		return false
	}
	// Load before the CAS: a pending wake-up costs no read-modify-write on the shared line.
	return atomic.LoadUint32(wakePending) == 0 && atomic.CompareAndSwapUint32(wakePending, 0, 1)
}

// SpinBegin tells senders that one more receiver thread polls this inbox: they stop asking for
// wake-ups. Safe from any goroutine; a no-op after Close.
func (in *Inbox) SpinBegin() {
	if in.enter() {
		atomic.AddInt32(in.spinners, 1)
		in.leave()
	}
}

// SpinEnd undoes one SpinBegin. The receiver then calls Pending before sleeping in the kernel.
// Safe from any goroutine; a no-op after Close.
func (in *Inbox) SpinEnd() {
	if in.enter() {
		atomic.AddInt32(in.spinners, -1)
		in.leave()
	}
}

// ClearWake is called when the receiver read a wake datagram from its kernel socket; it then
// calls Pending. Safe from any goroutine; a no-op after Close.
func (in *Inbox) ClearWake() {
	if in.enter() {
		atomic.SwapUint32(in.wakePending, 0) // a barrier before the next Pending's loads
		in.leave()
	}
}

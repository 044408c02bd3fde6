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

// needWake is the sender's half, called after publishing.
func needWake(spinners *int32, wakePending *uint32) bool {
	// A negative count (a peer scribbled on it) means nobody spins.
	if atomic.LoadInt32(spinners) > 0 {
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
		atomic.StoreUint32(in.wakePending, 0)
		in.leave()
	}
}

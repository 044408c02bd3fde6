package stats

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The command doorbell: a futex on the low 32 bits of the header's
// posted-commands word (little-endian: the low half is at the word's
// address). The futex is shared (no FUTEX_PRIVATE_FLAG) because waiter and
// waker are different processes mapping the same file page.
//
// Invariant: the address passed to the kernel is inside a live mapping of
// the segment (the writer's mapping is never unmapped, only replaced in
// place by Close; the reader wakes only while its Segment is open) and is
// 8-byte aligned.

const (
	futexWait = 0 // FUTEX_WAIT, shared
	futexWake = 1 // FUTEX_WAKE, shared
)

// futexWaitWord sleeps while the low 32 bits of *w equal val, at most
// timeoutNs nanoseconds (<= 0: no limit).
func futexWaitWord(w *uint64, val uint32, timeoutNs int64) {
	var ts *unix.Timespec
	if timeoutNs > 0 {
		t := unix.NsecToTimespec(timeoutNs)
		ts = &t
	}
	// EAGAIN (value already changed), EINTR and ETIMEDOUT all mean "look
	// again": the caller rereads the word.
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(ts)), 0, 0)
}

// futexWakeWord wakes every waiter on *w.
func futexWakeWord(w *uint64) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}

package iomux

import (
	"unsafe"

	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
)

// sigCounters views the thread's counters umem.SigCounters found as transport.SigCounters
// (same layout and size, see umem.SigWords; the sizes are compared at compile time below); nil
// for nil. The words are 8-byte aligned (the C struct holds long longs), as Wake needs.
func sigCounters(c *[umem.SigWords]uint32) *transport.SigCounters {
	return (*transport.SigCounters)(unsafe.Pointer(c))
}

// Either difference overflows a uintptr constant, which does not compile, when the sizes differ.
const (
	_ = uintptr(umem.SigWords*4 - unsafe.Sizeof(transport.SigCounters{}))
	_ = uintptr(unsafe.Sizeof(transport.SigCounters{}) - umem.SigWords*4)
)

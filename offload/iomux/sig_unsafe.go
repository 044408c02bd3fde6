package iomux

import (
	"unsafe"

	"github.com/goxio/goxio/offload/transport"
)

// sigCounters views the thread's counters umem.SigCounters found as transport.SigCounters
// (same layout: three uint32, see umem.SigCounters); nil for nil.
func sigCounters(c *[3]uint32) *transport.SigCounters {
	return (*transport.SigCounters)(unsafe.Pointer(c))
}

package udpcall

import (
	"sync/atomic"
	"unsafe"
)

// SpillLeft reports whether a spill region (offload/spill.go, shim/spill.c) has a datagram no
// process took yet: its cursor (word 2) is below its count (word 1).
//
// Invariant: region is at least 16 bytes, 4-aligned (an mmapped region), and shared with other
// processes: the cursor is read atomically.
func SpillLeft(region []byte) bool {
	if len(region) < 16 {
		return false
	}
	count := atomic.LoadUint32((*uint32)(unsafe.Pointer(&region[4])))
	cursor := atomic.LoadUint32((*uint32)(unsafe.Pointer(&region[8])))
	return cursor < count
}

package offload

import "unsafe"

// regionAddr is the address of a spill region for the C side.
//
// Invariant: region is an mmapped region (udpcall.BuildSpill) that stays mapped for the life of the
// process; its address never changes and the garbage collector does not manage it.
func regionAddr(region []byte) uintptr { return uintptr(unsafe.Pointer(&region[0])) }

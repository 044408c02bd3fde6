package main

/*
#include "engine.h"
*/
import "C"

import "unsafe"

// SetSpill gives fd the region of datagrams spilled at a fork and flags it (spill.c).
//
// Invariant: region is the address of a MAP_SHARED | MAP_ANONYMOUS mapping the engine made
// (offload/spill.go) and never unmaps while the process runs: it is not Go memory, so handing it
// to C as a pointer breaks no cgo rule, and C may keep it.
func (cTable) SetSpill(fd int, region uintptr) {
	C.goxio_spill_set(C.int(fd), *(*unsafe.Pointer)(unsafe.Pointer(&region)))
}

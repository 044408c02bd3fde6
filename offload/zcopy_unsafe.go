package offload

import "unsafe"

// zcopyArgs mirrors struct goxio_zcopy (shim/goxio.h): the arguments and results of VMA's
// recvfrom_zcopy as the preload library hands them over (zcopy.go).
type zcopyArgs struct {
	buf     uintptr
	len     uintptr
	flags   int32
	_       int32
	from    uintptr
	fromlen uintptr
	data    uintptr // out
	token   uint64  // out
}

// zcopyAt returns the struct goxio_zcopy at p.
//
// Invariant: p is the address of a struct goxio_zcopy the preload library made for this call
// (vma_records.c, on its stack: not the program's memory, not Go memory), live until the call
// returns; its layout is the C one (TestZcopyArgsLayout and the C side's static assertion).
func zcopyAt(p uintptr) *zcopyArgs {
	return (*zcopyArgs)(*(*unsafe.Pointer)(unsafe.Pointer(&p))) // not Go memory: vet's uintptr rule is for Go's
}

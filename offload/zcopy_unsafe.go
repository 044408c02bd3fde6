package offload

import "unsafe"

// zcopyArgs mirrors struct goxio_zcopy (shim/goxio.h): the arguments and results of VMA's
// recvfrom_zcopy as the preload library hands them over (zcopy.go).
type zcopyArgs struct {
	buf     uintptr
	len     uintptr
	flags   int32
	op      int32 // 0: recvfrom_zcopy; OpRead, OpRecvfrom or OpRecvmsg: that plain receive (boxRecv)
	from    uintptr
	fromlen uintptr
	data    uintptr // out
	token   uint64  // out
	box     uintptr // struct goxio_zbox*
	epoch   uint32  // out
	queued  uint32  // out
	advice  uint32  // out, for a plain receive: adviceNoBox or adviceBox
	_       uint32
}

// Advice of a plain receive (GOXIO_ZCOPY_* in shim/goxio.h).
const (
	adviceNoBox uint32 = 1 // the socket never queues in a box: its plain receives need not ask
	adviceBox   uint32 = 2 // it would queue in one: the library makes the fd's box
)

// tokensAt returns the n tokens at p.
//
// Invariant: p is the address of an array of n uint64 the preload library made for this call
// (vma_records.c, on its stack), live until the call returns; n is at most its FREE_BATCH.
func tokensAt(p uintptr, n int) []uint64 {
	if p == 0 || n <= 0 || n > maxFreeBatch {
		return nil
	}
	return unsafe.Slice((*uint64)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n)
}

// maxFreeBatch is vma_records.c's FREE_BATCH: the most tokens one OpZcopyFree carries.
const maxFreeBatch = 64

// zcopyAt returns the struct goxio_zcopy at p.
//
// Invariant: p is the address of a struct goxio_zcopy the preload library made for this call
// (vma_records.c, on its stack: not the program's memory, not Go memory), live until the call
// returns; its layout is the C one (TestZcopyArgsLayout and the C side's static assertion).
func zcopyAt(p uintptr) *zcopyArgs {
	return (*zcopyArgs)(*(*unsafe.Pointer)(unsafe.Pointer(&p))) // not Go memory: vet's uintptr rule is for Go's
}

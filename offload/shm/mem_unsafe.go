package shm

import "unsafe"

// This file is the only place the package turns mapped memory into typed pointers.
//
// Invariants:
//   - mem is a whole shared mapping returned by unix.Mmap, so &mem[0] is page-aligned; off is a
//     multiple of the word size (the layout constants are), so every word is naturally aligned
//     and sync/atomic operations on it are valid (and are atomic between processes too: they are
//     plain aligned loads and locked read-modify-writes on the same physical page).
//   - The pointer is used only while the mapping is live. Inbox and Outlet unmap a segment only
//     when no method can still reach its words: ring mappings are retired and unmapped only
//     once no Pending call is in flight (Inbox.retire), the inbox header only after Close made
//     every concurrent method a no-op and waited for those in flight.
//   - The memory is not Go memory: the garbage collector ignores these pointers, never moves or
//     frees what they point to.

// word64 returns the 64-bit word at byte offset off of mem.
func word64(mem []byte, off int) *uint64 {
	if off&7 != 0 {
		panic("shm: misaligned 64-bit word")
	}
	_ = mem[off+7]
	return (*uint64)(unsafe.Pointer(&mem[off]))
}

// word32 returns the 32-bit word at byte offset off of mem.
func word32(mem []byte, off int) *uint32 {
	if off&3 != 0 {
		panic("shm: misaligned 32-bit word")
	}
	_ = mem[off+3]
	return (*uint32)(unsafe.Pointer(&mem[off]))
}

// int32At returns the signed 32-bit word at byte offset off of mem.
func int32At(mem []byte, off int) *int32 {
	return (*int32)(unsafe.Pointer(word32(mem, off)))
}

// Addr returns the address of b's first byte (0 for an empty slice): where a held payload lies in
// this process, for the program that reads it in place (Inbox.Hold). The mapping stays while the
// record is held, so the address stays valid until its Release.
func Addr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&b[0]))
}

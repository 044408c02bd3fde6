package shmseg

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file is the only place the package turns mapped memory into other types.
//
// Invariant: mem is a whole live mapping returned by Create, Open or Map (unix.Mmap), so &mem[0]
// is page-aligned and every 8-byte word of it is naturally aligned: atomic operations on the
// words are valid (between processes too: they are plain aligned loads and locked
// read-modify-writes on the same physical page). The words stay valid while the mapping does:
// the caller unmaps it (Unmap) or retires it (Retire) only when no word is used any more, or,
// with Retire, while words may still be written harmlessly.

// Map maps the first size bytes of fd shared, read-write or read-only. (unix.MmapPtr, not
// unix.Mmap: the latter keeps every mapping in a table that Unmap of a re-sliced mapping would
// not find.)
func Map(fd, size int, writable bool) ([]byte, error) {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	p, err := unix.MmapPtr(fd, 0, nil, uintptr(size), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	return unsafe.Slice((*byte)(p), size), nil
}

// Unmap releases a whole mapping made by Create, Open or Map (nil is fine).
func Unmap(mem []byte) error {
	if len(mem) == 0 {
		return nil
	}
	if err := unix.MunmapPtr(unsafe.Pointer(&mem[0]), uintptr(len(mem))); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}

// Words returns the mapping as 64-bit words (len(mem)/8 of them).
func Words(mem []byte) []uint64 {
	if len(mem) < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), len(mem)/8)
}

// Bytes returns the memory of words as bytes (the inverse of Words).
func Bytes(words []uint64) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
}

// Retire replaces the mapping under mem with private anonymous zero pages at the same address,
// atomically (MAP_FIXED): a thread that still holds a pointer into mem keeps writing valid
// memory, no longer shared. The memory is never released (it is as small as the segment).
func Retire(mem []byte) error {
	if len(mem) == 0 {
		return nil
	}
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(&mem[0]), uintptr(len(mem)), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	if err != nil {
		return fmt.Errorf("remap %d bytes anonymous: %w", len(mem), err)
	}
	return nil
}

package stats

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file is the only place the package turns raw mapped memory into Go
// slices.
//
// Invariant: a []uint64 returned here covers exactly a live mapping of
// len*8 bytes starting on a page boundary (so every word is 8-byte aligned
// and atomic operations on it are valid). The mapping is never unmapped
// while such a slice is reachable: the writer replaces its shared mapping
// with anonymous memory at the same address instead of unmapping it
// (remapAnonymous), and the reader unmaps only in Segment.Close, after which
// it no longer touches the slice.

// mapShared maps the first words*8 bytes of fd shared and read-write (or
// read-only when writable is false) and returns them as words.
func mapShared(fd int, words int, writable bool) ([]uint64, error) {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	p, err := unix.MmapPtr(fd, 0, nil, uintptr(words)*8, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", words*8, err)
	}
	return unsafe.Slice((*uint64)(p), words), nil
}

// remapAnonymous replaces the mapping under mem with private anonymous
// zero pages at the same address, atomically (MAP_FIXED): a thread that still
// holds a pointer into mem keeps writing valid memory, no longer shared.
func remapAnonymous(mem []uint64) error {
	if len(mem) == 0 {
		return nil
	}
	p := unsafe.Pointer(&mem[0])
	_, err := unix.MmapPtr(-1, 0, p, uintptr(len(mem))*8, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED)
	if err != nil {
		return fmt.Errorf("remap %d bytes anonymous: %w", len(mem)*8, err)
	}
	return nil
}

// unmap releases a mapping made by mapShared.
func unmap(mem []uint64) error {
	if len(mem) == 0 {
		return nil
	}
	if err := unix.MunmapPtr(unsafe.Pointer(&mem[0]), uintptr(len(mem))*8); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}

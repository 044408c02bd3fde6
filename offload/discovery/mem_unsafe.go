package discovery

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file is the only place the package turns mapped memory into Go
// slices.
//
// Invariant: a []uint64 returned by mapShared covers exactly a live shared
// mapping of len*8 bytes starting on a page boundary, so every word is 8-byte
// aligned and atomic operations on it are valid. It stays mapped until
// unmap, which Dir.Close calls only after which no method touches it (the
// caller guarantees no call is in flight during Close).

// mapShared maps the first words*8 bytes of fd shared and read-write.
func mapShared(fd int, words int) ([]uint64, error) {
	p, err := unix.MmapPtr(fd, 0, nil, uintptr(words)*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", words*8, err)
	}
	return unsafe.Slice((*uint64)(p), words), nil
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

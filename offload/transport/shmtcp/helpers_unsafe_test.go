package shmtcp

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Invariant: test buffers handed to the transport as raw addresses are anonymous mappings made
// with unix.Mmap (not Go-managed memory, like a C program's), unmapped only at test cleanup,
// after every call using them returned.

// cmem returns n bytes of memory the Go runtime does not manage.
func cmem(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, max(n, 1), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap %d: %v", n, err)
	}
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return b[:n]
}

// addr is the address of b's first byte.
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// iovecs writes an iovec array describing bufs into mem and returns its address.
func iovecs(mem []byte, bufs ...[]byte) uintptr {
	vec := unsafe.Slice((*unix.Iovec)(unsafe.Pointer(&mem[0])), len(bufs))
	for i, b := range bufs {
		vec[i].Base = &b[0]
		vec[i].SetLen(len(b))
	}
	return addr(mem)
}

// msghdr writes a msghdr over the iovec array at iov into mem and returns its address.
func msghdr(mem []byte, iov uintptr, n int) (uintptr, *unix.Msghdr) {
	m := (*unix.Msghdr)(unsafe.Pointer(&mem[0]))
	*m = unix.Msghdr{Iov: (*unix.Iovec)(*(*unsafe.Pointer)(unsafe.Pointer(&iov)))}
	m.SetIovlen(n)
	return addr(mem), m
}

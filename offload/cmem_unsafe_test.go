package offload

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmem is memory outside the Go heap, standing in for the program's C memory that calls point
// into. Invariant: the mapping lives until the test ends; addresses handed out stay inside it.
type cmem struct {
	b   []byte
	off int
}

func newCmem(t *testing.T) *cmem {
	b, err := unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { _ = unix.Munmap(b) })
	return &cmem{b: b}
}

// alloc returns the address of n fresh bytes (8-byte aligned).
func (m *cmem) alloc(n int) (uintptr, []byte) {
	m.off = (m.off + 7) &^ 7
	p := m.b[m.off : m.off+n]
	m.off += n
	return uintptr(unsafe.Pointer(&p[0])), p
}

// sockaddr writes a sockaddr_in for ap and returns its address and length.
func (m *cmem) sockaddr(ap netip.AddrPort) (uintptr, uintptr) {
	p, b := m.alloc(unix.SizeofSockaddrInet4)
	binary.NativeEndian.PutUint16(b[0:], unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a := ap.Addr().As4()
	copy(b[4:8], a[:])
	return p, unix.SizeofSockaddrInet4
}

// bytes writes s and returns its address and length.
func (m *cmem) bytes(s string) (uintptr, uintptr) {
	p, b := m.alloc(len(s) + 1)
	copy(b, s)
	return p, uintptr(len(s))
}

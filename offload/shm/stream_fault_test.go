package shm

import (
	"bytes"
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"
)

// inaccessible returns a page-sized buffer whose every access faults (PROT_NONE).
func inaccessible(t *testing.T) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mprotect(b, unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// faults runs f and reports whether it panicked with a memory fault.
func faults(f func()) (faulted bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
			faulted = true
		}
	}()
	f()
	return false
}

// TestStreamCopyFault: a Write whose iovec faults in the middle of the copy (after bytes of
// earlier iovecs went into the ring, wrapping around its end) and a Read whose destination
// faults publish nothing: the ring is as before, and the connection keeps working.
func TestStreamCopyFault(t *testing.T) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	dir := testDir(t)
	a, b := connPair(t, dir, 4096, 4096)
	bad := inaccessible(t)

	// Move the positions near the end of the data area so the copies wrap.
	pos := uint64(0)
	if n, _, err := a.Write([][]byte{pattern(0, 4000)}); n != 4000 || err != nil {
		t.Fatal(n, err)
	}
	sink := make([]byte, 4000)
	if n, _, err := b.Read([][]byte{sink}); n != 4000 || err != nil {
		t.Fatal(n, err)
	}
	pos = 4000

	for i := range 3 {
		if !faults(func() { a.Write([][]byte{pattern(pos, 300), bad[:100]}) }) {
			t.Fatal("write from an inaccessible buffer did not fault")
		}
		if a.Unread() != 0 || b.Readable() != 0 || a.Space() != 4096 {
			t.Fatalf("fault %d published something: unread %d readable %d", i, a.Unread(), b.Readable())
		}
	}
	if n, _, err := a.Write([][]byte{pattern(pos, 500)}); n != 500 || err != nil {
		t.Fatalf("Write after fault = %d %v", n, err)
	}
	small := make([]byte, 10)
	for i := range 3 {
		if !faults(func() { b.Read([][]byte{small, bad}) }) {
			t.Fatal("read into an inaccessible buffer did not fault")
		}
		if b.Readable() != 500 || a.Unread() != 500 {
			t.Fatalf("fault %d consumed something: readable %d", i, b.Readable())
		}
		if !faults(func() { b.Peek([][]byte{bad}, 3) }) {
			t.Fatal("peek into an inaccessible buffer did not fault")
		}
	}
	got := make([]byte, 600)
	n, _, err := b.Read([][]byte{got})
	if n != 500 || err != nil || !bytes.Equal(got[:n], pattern(pos, 500)) {
		t.Fatalf("Read after faults = %d %v, bytes ok %v", n, err, bytes.Equal(got[:n], pattern(pos, 500)))
	}
}

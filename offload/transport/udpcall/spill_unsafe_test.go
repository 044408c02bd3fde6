package udpcall

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rxInto is a recvfrom-like Rx into buf and name (Go memory: the test only, nothing keeps it).
func rxInto(buf, name []byte, nameLen *uint32, flags int) *Rx {
	return &Rx{Bufs: [][]byte{buf}, Flags: flags, NamePtr: uintptr(unsafe.Pointer(&name[0])), NameLen: nameLen}
}

// TestSpillRoundTrip: what BuildSpill writes FromSpill reads back in order, each datagram once;
// a peek leaves it, a short buffer truncates it (MSG_TRUNC gives its length), the name and its
// length are the record's.
func TestSpillRoundTrip(t *testing.T) {
	name := []byte{2, 0, 0x1f, 0x90, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	region, err := BuildSpill([][2][]byte{{name, []byte("first")}, {name[:8], []byte("second datagram")}, {nil, nil}})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(region)
	buf, got := make([]byte, 32), make([]byte, 16)
	l := uint32(16)
	if n, ok := FromSpill(region, rxInto(buf, got, &l, unix.MSG_PEEK)); !ok || string(buf[:n]) != "first" || l != 16 || string(got) != string(name) {
		t.Fatalf("peek: %d %v %q namelen %d", n, ok, buf[:max(n, 0)], l)
	}
	if n, ok := FromSpill(region, rxInto(buf, got, &l, 0)); !ok || string(buf[:n]) != "first" {
		t.Fatalf("first: %d %v %q", n, ok, buf[:max(n, 0)])
	}
	l = 16
	if n, ok := FromSpill(region, rxInto(buf[:6], got, &l, unix.MSG_TRUNC)); !ok || n != 15 || string(buf[:6]) != "second" || l != 8 {
		t.Fatalf("second, truncated: %d %v %q namelen %d", n, ok, buf[:6], l)
	}
	if n, ok := FromSpill(region, rxInto(buf, got, &l, 0)); !ok || n != 0 || l != 0 {
		t.Fatalf("empty datagram: %d %v namelen %d", n, ok, l)
	}
	if SpillLeft(region) {
		t.Fatal("SpillLeft after every datagram was taken")
	}
	if _, ok := FromSpill(region, rxInto(buf, got, &l, 0)); ok {
		t.Fatal("a datagram after the last one")
	}
}

// TestSpillMalformed: a region whose words do not describe records inside it yields nothing (the
// region is shared with a forked child that may scribble on it).
func TestSpillMalformed(t *testing.T) {
	le := binary.LittleEndian
	for _, tc := range []struct {
		name string
		mend func(r []byte)
	}{
		{"bad magic", func(r []byte) { le.PutUint32(r, 0) }},
		{"count past the region", func(r []byte) { le.PutUint32(r[4:], 1<<30) }},
		{"offset past the region", func(r []byte) { le.PutUint32(r[16:], uint32(len(r))) }},
		{"offset into the header", func(r []byte) { le.PutUint32(r[16:], 8) }},
		{"unaligned offset", func(r []byte) { le.PutUint32(r[16:], 25) }},
		{"length past the region", func(r []byte) { le.PutUint32(r[24:], 1<<20) }},
		{"name too long", func(r []byte) { le.PutUint32(r[28:], 33) }},
	} {
		region, err := BuildSpill([][2][]byte{{make([]byte, 16), []byte("payload")}})
		if err != nil {
			t.Fatal(err)
		}
		tc.mend(region)
		buf, name := make([]byte, 32), make([]byte, 16)
		l := uint32(16)
		if n, ok := FromSpill(region, rxInto(buf, name, &l, 0)); ok {
			t.Errorf("%s: read %d bytes", tc.name, n)
		}
		unix.Munmap(region)
	}
	if _, ok := FromSpill(nil, &Rx{}); ok {
		t.Fatal("nil region read")
	}
}

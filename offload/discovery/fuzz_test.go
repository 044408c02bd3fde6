package discovery

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// entryImage returns the byte image of e as Publish stores it.
func entryImage(e Entry, pid int) []byte {
	e, err := normalize(e)
	if err != nil {
		panic(err)
	}
	var w [entryWords]uint64
	encode(&w, e, pid, 1234, 5)
	b := make([]byte, entryBytes)
	for i, x := range w {
		binary.LittleEndian.PutUint64(b[i*8:], x)
	}
	return b
}

// FuzzDecode feeds arbitrary entry images to the decoder: it must never
// panic, and whatever it accepts must be an entry Publish could have stored
// (normalized, valid inbox name) that encodes back to an image decoding to
// the same entry. Seeds: testdata/fuzz/FuzzDecode and the images below.
func FuzzDecode(f *testing.F) {
	f.Add(entryImage(v4("seed4", "127.0.0.1:5000"), 100))
	e := v6("seed6", "[::]:5353")
	e.Group, e.Source = ad("ff15::1"), ad("2001:db8::1")
	e.Peer = ap("[::ffff:10.0.0.1]:9")
	e.V6Only, e.ReusePort, e.ReuseAddr, e.NoMulticastAll = false, true, true, true
	f.Add(entryImage(e, 4194303))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, ok := decodeBytes(b)
		if !ok {
			return
		}
		if r.PID <= 0 || !validInbox(r.Inbox) || r.Family != unix.AF_INET && r.Family != unix.AF_INET6 {
			t.Fatalf("accepted a bad entry: %+v", r)
		}
		n, err := normalize(r.Entry)
		if err != nil || n != r.Entry {
			t.Fatalf("accepted an entry Publish would not store: %+v (%v)", r, err)
		}
		r2, ok := decodeBytes(entryImage(r.Entry, r.PID))
		if !ok || r2.Entry != r.Entry {
			t.Fatalf("round trip: %+v -> %+v (%v)", r.Entry, r2.Entry, ok)
		}
	})
}

// TestDecodeRejects: images with any one field out of range are rejected.
func TestDecodeRejects(t *testing.T) {
	good := entryImage(v4("ok", "127.0.0.1:5000"), 100)
	if _, ok := decodeBytes(good); !ok {
		t.Fatal("good image rejected")
	}
	mutate := []struct {
		name string
		f    func(b []byte)
	}{
		{"free", func(b []byte) { binary.LittleEndian.PutUint32(b[eOwner*8:], 0) }},
		{"pid too big", func(b []byte) { binary.LittleEndian.PutUint32(b[eOwner*8:], 1<<22) }},
		{"unknown flag", func(b []byte) { b[eOwner*8+4] |= 0x80 }},
		{"family", func(b []byte) { b[eMeta*8] = 3 }},
		{"inbox length 0", func(b []byte) { b[eMeta*8+1] = 0 }},
		{"inbox length 64", func(b []byte) { b[eMeta*8+1] = 64 }},
		{"bytes after inbox", func(b []byte) { b[eInbox*8+10] = 'x' }},
		{"slash in inbox", func(b []byte) { b[eInbox*8] = '/' }},
		{"port 0", func(b []byte) { binary.LittleEndian.PutUint16(b[eMeta*8+2:], 0) }},
		{"address kind 3", func(b []byte) { b[eMeta*8+6] |= 3 }},
		{"IPv4 with high bytes", func(b []byte) { b[eLocal*8+5] = 1 }},
		{"absent address with bytes", func(b []byte) { b[ePeer*8] = 1 }},
		{"IPv6 local on AF_INET", func(b []byte) { b[eMeta*8+6] = kind6 }},
		{"group not multicast", func(b []byte) { b[eMeta*8+6] |= kind4 << 4; b[eGroup*8] = 10 }},
		{"meta top byte", func(b []byte) { b[eMeta*8+7] = 1 }},
		{"short", nil},
	}
	for _, m := range mutate {
		b := append([]byte(nil), good...)
		if m.f == nil {
			b = b[:len(b)-1]
		} else {
			m.f(b)
		}
		if r, ok := decodeBytes(b); ok {
			t.Errorf("%s: accepted %+v", m.name, r)
		}
	}
}

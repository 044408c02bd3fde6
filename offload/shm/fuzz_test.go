package shm

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/goxio/goxio/internal/shmseg"
)

// Fuzzing what the consumer reads from shared memory. Seeds live in testdata/fuzz; run with
//
//	go test -run '^$' -fuzz FuzzRingConsumer -fuzztime 60s ./offload/shm
//	go test -run '^$' -fuzz FuzzRingHeader -fuzztime 60s ./offload/shm
//	go test -run '^$' -fuzz FuzzSlotTable -fuzztime 60s ./offload/shm

// FuzzRingConsumer puts arbitrary bytes in a ring's data area and arbitrary head and tail
// positions: the consumer must never panic, never loop without bound, and return only records
// inside the data area, each taking the space its length says, at most one lap of them.
func FuzzRingConsumer(f *testing.F) {
	f.Add(uint64(0), uint64(0), []byte{})
	hello := make([]byte, 2*recAlign)
	binary.NativeEndian.PutUint64(hello, recWord(5, 2, kindData, 0))
	copy(hello[recNameOff:], []byte{1, 2})
	copy(hello[recHdr:], "hello")
	f.Add(uint64(0), uint64(recAlign), hello)
	pad := make([]byte, MinRingBytes)
	binary.NativeEndian.PutUint64(pad[MinRingBytes-recAlign:], recWord(1, 0, kindPad, MinRingBytes-recAlign))
	binary.NativeEndian.PutUint64(pad, recWord(0, 0, kindData, MinRingBytes))
	f.Add(uint64(MinRingBytes-recAlign), uint64(MinRingBytes+recAlign), pad)
	dir := testDir(f)
	mem, err := createSegment(shmseg.Join(dir, "fuzzring"), ringDataOff+MinRingBytes)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { shmseg.Unmap(mem) })
	initRing(mem, MinRingBytes, 1, 1, 1)
	f.Fuzz(func(t *testing.T, head, tail uint64, data []byte) {
		area := mem[ringDataOff:]
		clear(area)
		copy(area, data)
		atomic.StoreUint64(word64(mem, rgTail), tail)
		r, err := newRing(mem)
		if err != nil {
			t.Fatalf("valid header refused: %v", err)
		}
		h := head &^ (recAlign - 1)
		r.head.Store(h)
		for i := 0; ; i++ {
			if i > MinRingBytes/recAlign+1 {
				t.Fatalf("%d records out of a %d-byte ring", i, MinRingBytes)
			}
			name, d, next, err := r.peek()
			if err != nil {
				if err != ErrEmpty && err != ErrCorrupt {
					t.Fatalf("peek: %v", err)
				}
				return
			}
			if next <= h || next-h > r.cap || next&(recAlign-1) != 0 {
				t.Fatalf("record [%d, %d) from head %d", h, next, h)
			}
			if len(name) > MaxName || len(d) > MaxPayload || recSize(len(d)) > next-h {
				t.Fatalf("record of %d bytes with name %d in %d bytes", len(d), len(name), next-h)
			}
			r.pop(next)
			h = next
		}
	})
}

// FuzzRingHeader scribbles on a ring's header page: attaching either refuses it or yields a
// consumer whose capacity matches the mapping.
func FuzzRingHeader(f *testing.F) {
	f.Add([]byte{}, uint64(MinRingBytes))
	f.Add([]byte{0x47, 0x58, 0x53, 0x48, 0x52, 0x49, 0x4e, 0x47, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}, uint64(MinRingBytes))
	dir := testDir(f)
	mem, err := createSegment(shmseg.Join(dir, "fuzzhdr"), ringDataOff+MinRingBytes)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { shmseg.Unmap(mem) })
	f.Fuzz(func(t *testing.T, hdr []byte, capacity uint64) {
		initRing(mem, capacity, 1, 1, 1)
		copy(mem[:ringDataOff], hdr)
		r, err := newRing(mem)
		if err != nil {
			return
		}
		if r.cap != MinRingBytes || len(r.data) != MinRingBytes || r.mask != MinRingBytes-1 {
			t.Fatalf("ring of capacity %d accepted in a %d-byte mapping", r.cap, len(mem))
		}
		r.peek()
	})
}

// FuzzSlotTable writes arbitrary bytes over an inbox's slot table (what senders control): the
// receiver's Refresh, Peek, Pending, Stats and Close and a new sender's DialInbox must neither
// panic nor hang, and a real sender keeps working whenever its slot survived.
func FuzzSlotTable(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 4*slotSize))
	dir := testDir(f)
	f.Fuzz(func(t *testing.T, table []byte) {
		in, err := CreateInbox(dir, "fuzzslots", 4)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		o, err := DialInbox(dir, "fuzzslots", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		o.Send(nil, [][]byte{[]byte("x")}, 1)
		in.Refresh()
		copy(in.mem[slotTableOff:slotTableOff+4*slotSize], table)
		atomic.AddUint64(in.genp, 1)
		in.Refresh()
		for range 3 {
			in.Pending()
			if _, d, err := in.Peek(); err == nil {
				if len(d) > MaxPayload {
					t.Fatalf("payload of %d bytes", len(d))
				}
				in.Pop()
			}
			in.Refresh()
		}
		in.Stats()
		if o2, err := DialInbox(dir, "fuzzslots", 0); err == nil {
			o2.Send(nil, [][]byte{[]byte("y")}, 1)
			in.Refresh()
			o2.Close()
		}
	})
}

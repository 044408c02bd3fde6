package shm

import (
	"bytes"
	"errors"
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRingCapacity(t *testing.T) {
	for _, c := range []struct {
		in   int
		want uint64
	}{{0, MinRingBytes}, {1, MinRingBytes}, {4096, 4096}, {4097, 8192}, {65536, 65536}, {100000, 131072}, {MaxRingBytes, MaxRingBytes}, {MaxRingBytes + 1, 0}} {
		if got := ringCapacity(c.in); got != c.want {
			t.Errorf("ringCapacity(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestRecordLayout(t *testing.T) {
	if recSize(0) != 64 || recSize(16) != 64 || recSize(17) != 128 || recSize(64) != 128 || recSize(80) != 128 {
		t.Fatalf("recSize: %d %d %d %d", recSize(0), recSize(24), recSize(25), recSize(64))
	}
	if tagPID(claimTag(1234, 0)) != 1234 || tagSeq(claimTag(1234, 0)) != 1 || tagIsReady(claimTag(1234, 0)) {
		t.Fatalf("claimTag: %x", claimTag(1234, 0))
	}
	old := claimTag(77, claimTag(5, 0)) | tagReady
	if f := freeTag(old); tagPID(f) != 0 || tagSeq(f) != 2 || claimTag(9, f) == old {
		t.Fatalf("freeTag %x from %x", f, old)
	}
}

// TestSendPeekPopWraps sends records of many sizes through a small ring many times around
// (padding records at the end), in several pieces, and checks every byte and name.
func TestSendPeekPopWraps(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "wrap", 4)
	o := mustDial(t, dir, "wrap", MinRingBytes)
	buf := make([]byte, 2000)
	var pads, lap uint64
	for seq := range uint64(3000) {
		size := sizeFor(seq)
		rec := makeRecord(buf, 1, seq, size)
		name := bytes.Repeat([]byte{byte(seq)}, int(seq%29))
		cut := int(seq) % size
		if _, err := o.Send(name, [][]byte{rec[:cut], nil, rec[cut:]}, size); err != nil {
			t.Fatalf("send %d: %v", seq, err)
		}
		if o.p.s.tail/o.p.cap != lap {
			lap = o.p.s.tail / o.p.cap
			pads++
		}
		gotName, got, err := drainOne(in)
		if err != nil {
			t.Fatalf("peek %d: %v", seq, err)
		}
		if !bytes.Equal(gotName, name) {
			t.Fatalf("record %d: name %x, want %x", seq, gotName, name)
		}
		if _, s, ok := checkRecord(got); !ok || s != seq || len(got) != size {
			t.Fatalf("record %d: bad payload (len %d, seq %d, ok %v)", seq, len(got), s, ok)
		}
	}
	if pads == 0 {
		t.Fatalf("the ring never wrapped")
	}
	if pads < 100 {
		t.Fatalf("the ring wrapped only %d times", pads)
	}
	if _, _, err := in.Peek(); err != ErrEmpty {
		t.Fatalf("Peek on empty: %v", err)
	}
	st := in.Stats()
	if len(st) != 1 || st[0].Pushed != 3000 || st[0].DepthBytes != 0 || st[0].DepthRecords != 0 || st[0].Drops != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestShortBufs: bufs holding fewer bytes than total give a record of what they hold.
func TestShortBufs(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "short", 1)
	o := mustDial(t, dir, "short", 0)
	if _, err := o.Send(nil, [][]byte{[]byte("abc")}, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Send(nil, [][]byte{[]byte("abcdef"), []byte("gh")}, 4); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"abc", "abcd"} {
		_, got, err := drainOne(in)
		if err != nil || string(got) != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
	}
}

func TestSendTooBig(t *testing.T) {
	dir := testDir(t)
	mustInbox(t, dir, "big", 1)
	o := mustDial(t, dir, "big", 0)
	if _, err := o.Send(nil, nil, MaxPayload+1); err != ErrTooBig {
		t.Fatalf("payload too big: %v", err)
	}
	if _, err := o.Send(make([]byte, MaxName+1), nil, 0); err != ErrTooBig {
		t.Fatalf("name too big: %v", err)
	}
	if _, err := o.Send(nil, nil, -1); err != ErrTooBig {
		t.Fatalf("negative total: %v", err)
	}
	// A datagram larger than the whole ring can never fit: a drop.
	if _, err := o.Send(nil, [][]byte{make([]byte, 5000)}, 5000); err != ErrFull {
		t.Fatalf("larger than ring: %v", err)
	}
}

// TestOverflow fills a ring, counts the drops and checks every delivered record.
func TestOverflow(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "ovf", 1)
	o := mustDial(t, dir, "ovf", 16384)
	buf := make([]byte, 2000)
	var sent, dropped []uint64
	for seq := range uint64(200) {
		size := sizeFor(seq)
		_, err := o.Send([]byte{1, 2}, [][]byte{makeRecord(buf, 7, seq, size)}, size)
		switch err {
		case nil:
			sent = append(sent, seq)
		case ErrFull:
			dropped = append(dropped, seq)
		default:
			t.Fatalf("send %d: %v", seq, err)
		}
	}
	if len(dropped) == 0 || len(sent) == 0 {
		t.Fatalf("sent %d dropped %d: the ring did not overflow", len(sent), len(dropped))
	}
	in.Refresh()
	st := in.Stats()
	if len(st) != 1 || st[0].Drops != uint64(len(dropped)) || st[0].Pushed != uint64(len(sent)) || st[0].DepthRecords != uint64(len(sent)) {
		t.Fatalf("stats %+v, sent %d dropped %d", st, len(sent), len(dropped))
	}
	if ost := o.Stats(); ost.Drops != uint64(len(dropped)) || ost.Pushed != uint64(len(sent)) {
		t.Fatalf("outlet stats %+v", ost)
	}
	for i, want := range sent {
		_, got, err := drainOne(in)
		if err != nil {
			t.Fatalf("record %d of %d: %v", i, len(sent), err)
		}
		if _, seq, ok := checkRecord(got); !ok || seq != want {
			t.Fatalf("record %d: seq %d ok %v, want %d", i, seq, ok, want)
		}
	}
	if _, _, err := drainOne(in); err != ErrEmpty {
		t.Fatalf("after drain: %v", err)
	}
	// Space is back.
	if _, err := o.Send(nil, [][]byte{makeRecord(buf, 7, 999, 1000)}, 1000); err != nil {
		t.Fatalf("send after drain: %v", err)
	}
}

// TestSendPanicKeepsRing: a copy that faults (a buffer on a PROT_NONE page, like a bad pointer
// from the program) panics out of Send without publishing anything or keeping the mutex.
func TestSendPanicKeepsRing(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "fault", 1)
	o := mustDial(t, dir, "fault", 0)
	bad, err := unix.Mmap(-1, 0, 4096, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(bad)
	if _, err := o.Send(nil, [][]byte{[]byte("first")}, 5); err != nil {
		t.Fatal(err)
	}
	func() {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if recover() == nil {
				t.Errorf("no fault copying from a PROT_NONE page")
			}
		}()
		o.Send(nil, [][]byte{[]byte("xx"), bad[:100]}, 102)
	}()
	if _, err := o.Send(nil, [][]byte{[]byte("third")}, 5); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first", "third"} {
		_, got, err := drainOne(in)
		if err != nil || string(got) != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
	}
	if _, _, err := drainOne(in); !errors.Is(err, ErrEmpty) {
		t.Fatalf("after drain: %v", err)
	}
}

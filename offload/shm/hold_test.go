package shm

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// peekHold refreshes, peeks and holds the next datagram: its payload (aliasing the ring) and
// handle.
func peekHold(t *testing.T, in *Inbox) ([]byte, uint64) {
	t.Helper()
	_, d, err := in.Peek()
	if err == ErrEmpty {
		in.Refresh()
		_, d, err = in.Peek()
	}
	if err != nil {
		t.Fatalf("peek: %v", err)
	}
	h, err := in.Hold()
	if err != nil {
		t.Fatalf("hold: %v", err)
	}
	return d, h
}

// TestHoldBackPressure holds every record of a small ring: the sender gets ErrFull while they are
// held (the held payloads stay intact), and room again once the oldest are freed, out of order.
func TestHoldBackPressure(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "hold", 4)
	o := mustDial(t, dir, "hold", MinRingBytes)
	buf := make([]byte, 1000)
	var held [][]byte
	var handles []uint64
	seq := uint64(0)
	for ; ; seq++ {
		_, err := o.Send(nil, [][]byte{makeRecord(buf, 1, seq, 500)}, 500)
		if errors.Is(err, ErrFull) {
			break
		}
		if err != nil {
			t.Fatalf("send %d: %v", seq, err)
		}
		d, h := peekHold(t, in)
		held, handles = append(held, d), append(handles, h)
	}
	if seq < 4 || in.HeldNow() != int(seq) {
		t.Fatalf("%d records held before the ring filled, HeldNow %d", seq, in.HeldNow())
	}
	if _, _, err := in.Peek(); err != ErrEmpty {
		t.Fatalf("peek after holding all: %v", err)
	}
	for i, d := range held {
		if _, s, ok := checkRecord(d); !ok || s != uint64(i) {
			t.Fatalf("held record %d: seq %d ok %v", i, s, ok)
		}
	}
	if st := o.Stats(); st.Drops != 1 {
		t.Fatalf("drops %d, want 1", st.Drops)
	}
	// Freeing a younger record moves nothing: the ring is still full.
	if err := in.Release(handles[1]); err != nil {
		t.Fatalf("release 1: %v", err)
	}
	if _, err := o.Send(nil, [][]byte{makeRecord(buf, 1, seq, 500)}, 500); !errors.Is(err, ErrFull) {
		t.Fatalf("send with the oldest held: %v", err)
	}
	// Freeing the oldest moves the producer's head over both.
	head0 := *in.holdTab[handles[0]&0xffffffff-1].r.headp
	if err := in.Release(handles[0]); err != nil {
		t.Fatalf("release 0: %v", err)
	}
	r := in.rings[0]
	if got, want := *r.headp, r.holds[0].pos; got != want || got != head0+2*recSize(500) {
		t.Fatalf("producer head %d, want %d (= %d + 2 records)", got, want, head0)
	}
	for k := 0; k < 2; k++ {
		if _, err := o.Send(nil, [][]byte{makeRecord(buf, 1, seq, 500)}, 500); err != nil {
			t.Fatalf("send after free: %v", err)
		}
		seq++
	}
	for i := 2; i < len(held); i++ {
		if _, s, ok := checkRecord(held[i]); !ok || s != uint64(i) {
			t.Fatalf("held record %d changed: seq %d ok %v", i, s, ok)
		}
	}
	// Popped records behind held ones are freed with them.
	_, d, err := drainOne(in)
	if err != nil || len(d) != 500 {
		t.Fatalf("pop behind held: %v", err)
	}
	for _, h := range handles[2:] {
		if err := in.Release(h); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	if in.HeldNow() != 0 || *r.headp != r.head.Load() || len(r.holds) != 0 {
		t.Fatalf("after freeing all: held %d, producer head %d, consumer head %d", in.HeldNow(), *r.headp, r.head.Load())
	}
}

// TestHoldBadHandles: double free, made-up handles and another inbox's handle are refused and
// change nothing.
func TestHoldBadHandles(t *testing.T) {
	dir := testDir(t)
	a, b := mustInbox(t, dir, "ha", 4), mustInbox(t, dir, "hb", 4)
	oa, ob := mustDial(t, dir, "ha", MinRingBytes), mustDial(t, dir, "hb", MinRingBytes)
	for _, o := range []*Outlet{oa, ob} {
		if _, err := o.Send(nil, [][]byte{[]byte("x")}, 1); err != nil {
			t.Fatal(err)
		}
	}
	_, ha := peekHold(t, a)
	_, hb := peekHold(t, b)
	for _, bad := range []uint64{0, 1, 2, ha + 1<<32, ha + 1, 1<<63 | 1, hb} {
		if err := a.Release(bad); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("release %#x: %v", bad, err)
		}
	}
	if a.HeldNow() != 1 || b.HeldNow() != 1 {
		t.Fatalf("held %d %d after refused frees", a.HeldNow(), b.HeldNow())
	}
	if err := a.Release(ha); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ha); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("double free: %v", err)
	}
	// The entry is reused: the old handle still names nothing.
	if _, err := oa.Send(nil, [][]byte{[]byte("y")}, 1); err != nil {
		t.Fatal(err)
	}
	_, ha2 := peekHold(t, a)
	if ha2 == ha || a.Release(ha) == nil {
		t.Fatalf("stale handle %#x accepted (new %#x)", ha, ha2)
	}
	if err := a.Release(ha2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Hold(); err != ErrEmpty {
		t.Fatalf("hold without a peek: %v", err)
	}
}

// TestHoldSurvivesSenderClose: a ring whose sender closed stays mapped, and its file stays, while
// a record is held; both go when it is freed.
func TestHoldSurvivesSenderClose(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "hc", 4)
	o, err := DialInbox(dir, "hc", MinRingBytes)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	if _, err := o.Send(nil, [][]byte{makeRecord(buf, 7, 42, 100)}, 100); err != nil {
		t.Fatal(err)
	}
	d, h := peekHold(t, in)
	path := in.rings[0].path
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		in.Refresh()
	}
	if len(in.rings) != 1 || !in.rings[0].lingering {
		t.Fatalf("rings %d after the sender closed", len(in.rings))
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("ring file gone while held: %v", err)
	}
	if _, s, ok := checkRecord(d); !ok || s != 42 {
		t.Fatalf("held record after the sender closed: %d %v", s, ok)
	}
	if err := in.Release(h); err != nil {
		t.Fatal(err)
	}
	if len(in.rings) != 0 {
		t.Fatalf("ring kept after its last held record was freed")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("ring file after the last free: %v", err)
	}
}

// TestHoldDetachedCorrupt: a ring detached for corruption while a record is held stays mapped
// (the record readable) until it is freed, and its sender is not told before.
func TestHoldDetachedCorrupt(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "hz", 4)
	o := mustDial(t, dir, "hz", MinRingBytes)
	buf := make([]byte, 100)
	for seq := range uint64(2) {
		if _, err := o.Send(nil, [][]byte{makeRecord(buf, 7, seq, 100)}, 100); err != nil {
			t.Fatal(err)
		}
	}
	d, h := peekHold(t, in)
	r := in.rings[0]
	// The sender scribbles an impossible length on the next record's word.
	w := word64(r.data, int(r.head.Load()&r.mask))
	atomic.StoreUint64(w, atomic.LoadUint64(w)|(1<<24-1))
	if _, _, err := in.Peek(); err != ErrEmpty || in.CorruptRings() != 1 || len(in.rings) != 0 {
		t.Fatalf("peek of the corrupt ring: %v, corrupt %d", err, in.CorruptRings())
	}
	if len(in.zombies) != 1 || atomic.LoadUint64(word64(r.mem, rgDetached)) != 0 || o.Closed() {
		t.Fatalf("zombies %d, detached word set before the free", len(in.zombies))
	}
	if _, s, ok := checkRecord(d); !ok || s != 0 {
		t.Fatalf("held record of the detached ring: %d %v", s, ok)
	}
	if err := in.Release(h); err != nil {
		t.Fatal(err)
	}
	if len(in.zombies) != 0 || !o.Closed() {
		t.Fatalf("zombie kept after its free")
	}
	if _, err := os.Stat(r.path); !os.IsNotExist(err) {
		t.Fatalf("ring file kept")
	}
}

// TestHoldConcurrent: a sender fills the ring while the consumer holds records and frees them in
// random order from another goroutine (serialized with the consumer, as the socket's receive
// mutex does); every record arrives once, intact, in order, and no held payload changes before
// its free.
func TestHoldConcurrent(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "hr", 4)
	o := mustDial(t, dir, "hr", 2*MinRingBytes)
	const total = 3000
	var mu sync.Mutex // the consumer's lock
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2000)
		for seq := uint64(0); seq < total; {
			size := sizeFor(seq)
			if _, err := o.Send(nil, [][]byte{makeRecord(buf, 3, seq, size)}, size); err == nil {
				seq++
			} else if !errors.Is(err, ErrFull) {
				t.Errorf("send: %v", err)
				return
			}
		}
	}()
	type heldData struct {
		h   uint64
		d   []byte
		seq uint64
	}
	var held []heldData
	rnd := rand.New(rand.NewPCG(1, 2))
	next := uint64(0)
	for next < total && !t.Failed() {
		mu.Lock()
		_, d, err := in.Peek()
		if err == ErrEmpty {
			in.Refresh()
			_, d, err = in.Peek()
		}
		if err == nil {
			_, s, ok := checkRecord(d)
			if !ok || s != next {
				mu.Unlock()
				t.Fatalf("record %d: seq %d ok %v", next, s, ok)
			}
			next++
			if rnd.IntN(3) == 0 {
				in.Pop()
			} else {
				h, err := in.Hold()
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, heldData{h, d, s})
			}
		}
		// Free a random held record now and then, or all of them when the ring is full.
		for len(held) > 0 && (rnd.IntN(2) == 0 || err != nil && len(held) > 8) {
			k := rnd.IntN(len(held))
			x := held[k]
			if _, s, ok := checkRecord(x.d); !ok || s != x.seq {
				mu.Unlock()
				t.Fatalf("held record %d changed before its free", x.seq)
			}
			if err := in.Release(x.h); err != nil {
				t.Fatal(err)
			}
			held = append(held[:k], held[k+1:]...)
		}
		mu.Unlock()
	}
	<-done
	for _, x := range held {
		if !bytes.Equal(x.d[:4], []byte{3, 0, 0, 0}) {
			t.Fatalf("held record %d changed", x.seq)
		}
		if err := in.Release(x.h); err != nil {
			t.Fatal(err)
		}
	}
	if in.HeldNow() != 0 {
		t.Fatalf("held %d", in.HeldNow())
	}
}

// TestHoldClose: closing the inbox with records held releases them and leaves no file.
func TestHoldClose(t *testing.T) {
	dir := testDir(t)
	in, err := CreateInbox(dir, "hx", 4)
	if err != nil {
		t.Fatal(err)
	}
	o := mustDial(t, dir, "hx", MinRingBytes)
	if _, err := o.Send(nil, [][]byte{[]byte("z")}, 1); err != nil {
		t.Fatal(err)
	}
	_, h := peekHold(t, in)
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := in.Release(h); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release after close: %v", err)
	}
	o.Close()
	if f := dirFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left: %v", f)
	}
}

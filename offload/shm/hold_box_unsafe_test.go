package shm

import (
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cBox returns a zeroed box outside Go memory, as the preload library's: the inbox keeps its
// address as a uintptr, which a box on a goroutine's stack would not survive (the stack moves
// when it grows). Never unmapped, as the library's: an inbox closed at cleanup still detaches it.
func cBox(t *testing.T) *boxMem {
	t.Helper()
	b, err := unix.Mmap(-1, 0, int(unsafe.Sizeof(boxMem{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	return (*boxMem)(unsafe.Pointer(&b[0]))
}

// TestBoxLayout: boxMem has struct goxio_zbox's layout (shim/goxio.h; vma_records.c asserts the
// same offsets on the C side).
func TestBoxLayout(t *testing.T) {
	var m boxMem
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"attached", unsafe.Offsetof(m.attached), 4}, {"epoch", unsafe.Offsetof(m.epoch), 8},
		{"front", unsafe.Offsetof(m.front), 12}, {"head", unsafe.Offsetof(m.head), 16},
		{"count", unsafe.Offsetof(m.count), 20}, {"urgent", unsafe.Offsetof(m.urgent), 24},
		{"nfree", unsafe.Offsetof(m.nfree), 28}, {"freed", unsafe.Offsetof(m.freed), 32},
		{"ent", unsafe.Offsetof(m.ent), 32 + 8*BoxFrees}, {"ent size", unsafe.Sizeof(m.ent[0]), 56},
		{"name", unsafe.Offsetof(m.ent[0].name), 24},
		{"kread", unsafe.Offsetof(m.kread), 32 + 8*BoxFrees + 56*BoxEntries}, {"knb", unsafe.Offsetof(m.knb), 32 + 8*BoxFrees + 56*BoxEntries + 4},
		{"kgen", unsafe.Offsetof(m.kgen), 32 + 8*BoxFrees + 56*BoxEntries + 8},
		{"kgenp", unsafe.Offsetof(m.kgenp), 32 + 8*BoxFrees + 56*BoxEntries + 16}, {"krx", unsafe.Offsetof(m.krx), 32 + 8*BoxFrees + 56*BoxEntries + 24},
		{"kwake", unsafe.Offsetof(m.kwake), 32 + 8*BoxFrees + 56*BoxEntries + 32},
		{"ktimeo", unsafe.Offsetof(m.ktimeo), 32 + 8*BoxFrees + 56*BoxEntries + 40},
		{"kbell", unsafe.Offsetof(m.kbell), 32 + 8*BoxFrees + 56*BoxEntries + 48},
		{"ksleep", unsafe.Offsetof(m.ksleep), 32 + 8*BoxFrees + 56*BoxEntries + 52},
		{"size", unsafe.Sizeof(m), 32 + 8*BoxFrees + 56*BoxEntries + 56},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, want %d", c.name, c.got, c.want)
		}
	}
}

// cTake is what the preload library's box_take does: the oldest queued record, unless the engine
// has the front.
func cTake(m *boxMem) (boxEnt, bool) {
	m.acquire()
	defer m.release()
	if m.attached == 0 || m.front != 0 || m.count == 0 {
		return boxEnt{}, false
	}
	e := m.ent[m.head]
	m.head = (m.head + 1) % BoxEntries
	atomic.StoreUint32(&m.count, m.count-1)
	return e, true
}

// cFree is what box_defer does: the token left for the engine to fold in.
func cFree(m *boxMem, tok uint64) {
	m.acquire()
	m.freed[m.nfree] = tok
	atomic.StoreUint32(&m.nfree, m.nfree+1)
	m.release()
}

// seqOf reads the sequence number of a record makeRecord wrote at p, n bytes.
func seqOf(t *testing.T, p uintptr, n uint32) uint64 {
	t.Helper()
	d := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), n) // ring memory, not Go's
	_, s, ok := checkRecord(d)
	if !ok {
		t.Fatalf("record at %#x does not check", p)
	}
	return s
}

// TestBoxQueue: records queued in the box are held (the producer's space stays taken), the
// library takes them oldest first without the engine, the engine's own Peek takes the next one
// first (the front, which keeps the library off until it is consumed), frees left in the box are
// folded in at the next Peek, Unbox leaves queued records with the inbox, Close forgets them.
func TestBoxQueue(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "box", 4)
	o := mustDial(t, dir, "box", 1<<16)
	buf := make([]byte, 1000)
	for seq := range uint64(10) {
		if _, err := o.Send([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, [][]byte{makeRecord(buf, 1, seq, 100)}, 100); err != nil {
			t.Fatalf("send %d: %v", seq, err)
		}
	}
	mem := cBox(t)
	p := uintptr(unsafe.Pointer(mem))
	d0, h0 := peekHold(t, in)
	if _, s, _ := checkRecord(d0); s != 0 {
		t.Fatalf("first record %d", s)
	}
	ep := in.UseBox(p, 7)
	if ep == 0 || in.UseBox(p, 8) != 0 || in.UseBox(p+8, 7) != 0 || in.UseBox(p, 7) != ep {
		t.Fatalf("UseBox: epoch %d, another fd's or box's not refused", ep)
	}
	queueRun(t, in, 4)
	if in.HeldNow() != 5 || mem.count != 4 || !in.Pending() {
		t.Fatalf("held %d, queued %d, pending %v", in.HeldNow(), mem.count, in.Pending())
	}
	// The library takes 1 and 2.
	var toks []uint64
	for want := uint64(1); want <= 2; want++ {
		e, ok := cTake(mem)
		if !ok || seqOf(t, e.data, e.len) != want || e.namelen != 16 || e.name[15] != 16 {
			t.Fatalf("take %d: ok %v", want, ok)
		}
		toks = append(toks, e.token)
	}
	// The engine's receive takes 3 (a peek, then the hold): the library waits meanwhile.
	_, d, err := in.Peek()
	if err != nil {
		t.Fatalf("peek: %v", err)
	}
	if _, s, _ := checkRecord(d); s != 3 {
		t.Fatalf("engine's peek: %d, want 3", s)
	}
	if _, ok := cTake(mem); ok {
		t.Fatal("the library took a record behind the engine's front")
	}
	h3, err := in.Hold()
	if err != nil {
		t.Fatal(err)
	}
	toks = append(toks, h3)
	// A copying receive takes 4 (Pop releases it).
	if _, d, err = in.Peek(); err != nil {
		t.Fatal(err)
	}
	if _, s, _ := checkRecord(d); s != 4 {
		t.Fatalf("second peek: %d, want 4", s)
	}
	in.Pop()
	if in.HeldNow() != 4 || in.BoxQueued() {
		t.Fatalf("held %d, queued %v", in.HeldNow(), in.BoxQueued())
	}
	// Frees through the box: folded in at the next look; the oldest (h0) still holds the head.
	for _, tok := range toks {
		cFree(mem, tok)
	}
	headp := *in.rings[0].headp
	if _, d, err = in.Peek(); err != nil {
		t.Fatal(err)
	}
	if _, s, _ := checkRecord(d); s != 5 || mem.nfree != 0 || in.HeldNow() != 1 || *in.rings[0].headp != headp {
		t.Fatalf("after the fold: peeked %d, %d frees left, %d held, head moved %v", s, mem.nfree, in.HeldNow(), *in.rings[0].headp != headp)
	}
	if err := in.Release(h0); err != nil || *in.rings[0].headp == headp {
		t.Fatalf("release of the oldest: %v, head moved %v", err, *in.rings[0].headp != headp)
	}
	for _, tok := range toks {
		if err := in.Release(tok); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("token freed twice: %v", err)
		}
	}
	// Queue 5 and 6; the fd goes: they stay with the inbox, in order, and the box is free.
	queueRun(t, in, 2)
	in.Unbox(7)
	if mem.attached != 0 || mem.count != 0 || !in.Pending() || in.UseBox(p, 7) != 0 {
		t.Fatalf("after Unbox: attached %d, count %d, pending %v", mem.attached, mem.count, in.Pending())
	}
	for want := uint64(5); want <= 7; want++ {
		_, d, err := in.Peek()
		if err != nil {
			t.Fatal(err)
		}
		if _, s, _ := checkRecord(d); s != want {
			t.Fatalf("after Unbox: %d, want %d", s, want)
		}
		in.Pop()
	}
	if in.HeldNow() != 0 {
		t.Fatalf("held %d after the pops", in.HeldNow())
	}
	// A new attach gets a new epoch; Close forgets what is queued and detaches the box.
	ep2 := in.UseBox(p, 7)
	if ep2 == 0 || ep2 == ep {
		t.Fatalf("second attach: epoch %d (first %d)", ep2, ep)
	}
	queueRun(t, in, 1)
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if mem.attached != 0 || mem.count != 0 || in.BoxQueued() {
		t.Fatalf("after Close: attached %d, count %d", mem.attached, mem.count)
	}
}

// TestBoxUrgent: the urgent word asks for frees at once while the held records take more than
// half the ring (charged as for the smallest datagrams), and folds in what the box has then.
func TestBoxUrgent(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "urgent", 4)
	o := mustDial(t, dir, "urgent", MinRingBytes)
	buf := make([]byte, 1000)
	mem := cBox(t)
	p := uintptr(unsafe.Pointer(mem))
	var toks []uint64
	for seq := uint64(0); mem.urgent == 0; seq++ {
		if _, err := o.Send(nil, [][]byte{makeRecord(buf, 1, seq, 64)}, 64); err != nil {
			t.Fatalf("send %d before the word was set: %v", seq, err)
		}
		_, h := peekHold(t, in)
		if seq == 0 && in.UseBox(p, 3) == 0 {
			t.Fatal("UseBox")
		}
		if seq == 0 {
			cFree(mem, h) // left in the box: folded in when the word is set
			continue
		}
		toks = append(toks, h)
	}
	if mem.nfree != 0 {
		t.Fatalf("%d frees left in the box once urgent", mem.nfree)
	}
	for _, tok := range toks {
		if err := in.Release(tok); err != nil {
			t.Fatal(err)
		}
	}
	if mem.urgent != 0 {
		t.Fatal("still urgent with nothing held")
	}
}

// queueRun queues the next n ring records in the box in one run, as the engine's prefetch does;
// outside a run Queue refuses.
func queueRun(t *testing.T, in *Inbox, n int) {
	t.Helper()
	name, data, err := in.PeekRings()
	if err != nil || in.Queue(name, data) {
		t.Fatalf("Queue outside a run: %v, or queued", err)
	}
	if !in.QueueBegin() {
		t.Fatal("QueueBegin: no box")
	}
	for i := range n {
		if i > 0 {
			if name, data, err = in.PeekRings(); err != nil {
				t.Fatalf("queue: %v", err)
			}
		}
		if !in.Queue(name, data) {
			t.Fatalf("queue %d of %d refused", i, n)
		}
	}
	in.QueueEnd()
}

// cKernelRead is the preload library's look before it reads the kernel socket itself (box.c,
// rx_kread): the box attached and armed, and the inbox's sender generation still the armed one.
func cKernelRead(m *boxMem) bool {
	m.acquire()
	defer m.release()
	return m.attached != 0 && m.kread != 0 && m.kgenp != 0 &&
		atomic.LoadUint64((*uint64)(*(*unsafe.Pointer)(unsafe.Pointer(&m.kgenp)))) == m.kgen // the inbox's mapping, not Go memory
}

// TestBoxKernelRead: the box lets the library read the kernel socket first while no sender has a
// ring to the inbox, and stops as soon as one registers (before its first record), when the
// engine disarms it, and when the inbox closes.
func TestBoxKernelRead(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "kread", 4)
	mem := cBox(t)
	p := uintptr(unsafe.Pointer(mem))
	var rx [4]uint64
	kr := func(nonblock bool) KernelRead { return KernelRead{Rx: &rx, Nonblock: nonblock, Bell: -1} }
	if in.ArmKernelRead(p, 5, KernelRead{Bell: -1}) || in.ArmKernelRead(0, 5, kr(false)) {
		t.Fatal("armed without counters or a box")
	}
	if !in.ArmKernelRead(p, 5, kr(false)) || !cKernelRead(mem) || mem.krx != uintptr(unsafe.Pointer(&rx)) {
		t.Fatal("not armed with no ring")
	}
	if !in.ArmKernelRead(p, 5, kr(false)) || in.ArmKernelRead(p, 6, kr(false)) {
		t.Fatal("arming again: refused for its own fd, or taken by another fd")
	}
	if !in.ArmKernelRead(p, 5, kr(true)) || mem.knb != 1 || !in.ArmKernelRead(p, 5, kr(false)) || mem.knb != 0 {
		t.Fatal("O_NONBLOCK not armed as given")
	}
	if !in.ArmKernelRead(p, 5, KernelRead{Rx: &rx, Bell: 9, Timeout: 1500}) || mem.kbell != 9 || mem.ktimeo != 1500 ||
		mem.kwake != uintptr(unsafe.Pointer(in.wakePending)) || !in.ArmKernelRead(p, 5, kr(false)) || mem.kbell != -1 || mem.ktimeo != 0 {
		t.Fatalf("doorbell, timeout or wake-up word not armed as given: %d %d %#x", mem.kbell, mem.ktimeo, mem.kwake)
	}
	in.UpdateKernelRead(KernelRead{Rx: &rx, Nonblock: true, Bell: 7, Timeout: 5})
	if mem.knb != 1 || mem.kbell != 7 || mem.ktimeo != 5 || !cKernelRead(mem) || !in.KernelReadArmed() {
		t.Fatalf("UpdateKernelRead of an armed box: knb %d, bell %d, timeout %d", mem.knb, mem.kbell, mem.ktimeo)
	}
	in.DisarmKernelRead()
	if in.KernelReadArmed() {
		t.Fatal("KernelReadArmed after DisarmKernelRead")
	}
	in.UpdateKernelRead(kr(false))
	if mem.knb != 1 || mem.kbell != 7 || cKernelRead(mem) {
		t.Fatal("UpdateKernelRead changed or armed a box that is not armed")
	}
	if !in.ArmKernelRead(p, 5, kr(false)) {
		t.Fatal("not armed again after the update")
	}
	atomic.AddInt32(&mem.ksleep, 2)
	if in.KernelSleepers() != 2 {
		t.Fatalf("KernelSleepers %d, want the box's 2", in.KernelSleepers())
	}
	atomic.AddInt32(&mem.ksleep, -2)
	in.DisarmKernelRead()
	if cKernelRead(mem) {
		t.Fatal("still armed after DisarmKernelRead")
	}
	if !in.ArmKernelRead(p, 5, kr(false)) {
		t.Fatal("not armed again")
	}
	o := mustDial(t, dir, "kread", MinRingBytes)
	if cKernelRead(mem) {
		t.Fatal("a sender registered a ring: the library still reads the kernel first")
	}
	if in.ArmKernelRead(p, 5, kr(false)) {
		t.Fatal("armed with a registered ring not yet attached")
	}
	in.Refresh()
	if in.ArmKernelRead(p, 5, kr(false)) || cKernelRead(mem) {
		t.Fatal("armed with a ring attached")
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	in.Refresh()
	in.Refresh()
	if !in.ArmKernelRead(p, 5, kr(false)) || !cKernelRead(mem) {
		t.Fatalf("not armed once the sender's ring went (rings %d)", len(*in.list.Load()))
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if cKernelRead(mem) || mem.attached != 0 {
		t.Fatal("armed or attached after Close")
	}
}

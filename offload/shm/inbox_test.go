package shm

import (
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/goxio/goxio/internal/shmseg"

	"golang.org/x/sys/unix"
)

// TestRoundRobin: one busy sender cannot starve the others.
func TestRoundRobin(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "rr", 4)
	buf := make([]byte, 64)
	for s := range 3 {
		o := mustDial(t, dir, "rr", 8192) // 40 records of 64 bytes and more
		n := 10
		if s == 0 {
			n = 40
		}
		for seq := range uint64(n) {
			if _, err := o.Send(nil, [][]byte{makeRecord(buf, uint32(s), seq, 32)}, 32); err != nil {
				t.Fatal(err)
			}
		}
	}
	in.Refresh()
	// The first 30 datagrams come 10 from each sender, each sender's in order.
	count := map[uint32]int{}
	next := map[uint32]uint64{}
	for i := range 60 {
		_, d, err := drainOne(in)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		s, seq, ok := checkRecord(d)
		if !ok || seq != next[s] {
			t.Fatalf("datagram %d: sender %d seq %d ok %v, want seq %d", i, s, seq, ok, next[s])
		}
		next[s]++
		count[s]++
		if i == 29 && (count[0] != 10 || count[1] != 10 || count[2] != 10) {
			t.Fatalf("after 30 datagrams: %v, want 10 each", count)
		}
	}
	if len(in.Stats()) != 3 {
		t.Fatalf("stats: %+v", in.Stats())
	}
}

// TestCloseInbox: senders see the close, every file goes away.
func TestCloseInbox(t *testing.T) {
	dir := testDir(t)
	in, err := CreateInbox(dir, "cl", 4)
	if err != nil {
		t.Fatal(err)
	}
	o1, err := DialInbox(dir, "cl", 0)
	if err != nil {
		t.Fatal(err)
	}
	in.Refresh() // o1 attached
	o2, err := DialInbox(dir, "cl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o1.Send(nil, [][]byte{[]byte("x")}, 1); err != nil {
		t.Fatal(err)
	}
	if len(dirFiles(t, dir)) != 3 {
		t.Fatalf("files: %v", dirFiles(t, dir))
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := in.Peek(); err != ErrClosed {
		t.Fatalf("Peek after Close: %v", err)
	}
	if in.Pending() {
		t.Fatalf("Pending after Close")
	}
	in.SpinBegin()
	in.SpinEnd()
	in.ClearWake()
	in.Refresh()
	for _, o := range []*Outlet{o1, o2} {
		if !o.Closed() {
			t.Fatalf("outlet does not see the close")
		}
		if _, err := o.Send(nil, [][]byte{[]byte("x")}, 1); err != ErrClosed {
			t.Fatalf("Send after inbox Close: %v", err)
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if f := dirFiles(t, dir); len(f) != 0 {
		t.Fatalf("files left: %v", f)
	}
	if _, err := DialInbox(dir, "cl", 0); err == nil {
		t.Fatalf("dial a closed and removed inbox")
	}
}

// TestOutletCloseDetaches: a closed sender's ring is drained, then detached, its file removed
// and its slot freed for the next sender.
func TestOutletCloseDetaches(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "oc", 1)
	o, err := DialInbox(dir, "oc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DialInbox(dir, "oc", 0); !errors.Is(err, ErrFull) {
		t.Fatalf("second dial with one slot: %v", err)
	}
	for i := range 3 {
		if _, err := o.Send(nil, [][]byte{{byte(i)}}, 1); err != nil {
			t.Fatal(err)
		}
	}
	if !in.Pending() {
		t.Fatalf("not pending after a registration")
	}
	in.Refresh()
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if !in.Pending() {
		t.Fatalf("not pending with data and a closed sender")
	}
	in.Refresh()
	if len(in.Stats()) != 1 || len(dirFiles(t, dir)) != 2 {
		t.Fatalf("closed ring detached before drained: %v", dirFiles(t, dir))
	}
	for i := range 3 {
		_, d, err := drainOne(in)
		if err != nil || len(d) != 1 || d[0] != byte(i) {
			t.Fatalf("datagram %d: %v %v", i, d, err)
		}
	}
	in.Refresh()
	if len(in.Stats()) != 0 || len(dirFiles(t, dir)) != 1 {
		t.Fatalf("drained closed ring still there: stats %v files %v", in.Stats(), dirFiles(t, dir))
	}
	// A sender that closes before the receiver ever attached its ring.
	o2, err := DialInbox(dir, "oc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o2.Send(nil, [][]byte{[]byte("again")}, 5); err != nil {
		t.Fatal(err)
	}
	o2.Close()
	if _, d, err := drainOne(in); err != nil || string(d) != "again" {
		t.Fatalf("new sender in the freed slot: %q %v", d, err)
	}
	in.Refresh()
	if len(in.Stats()) != 0 || len(dirFiles(t, dir)) != 1 {
		t.Fatalf("ring closed before its attach still there: stats %v files %v", in.Stats(), dirFiles(t, dir))
	}
}

// TestClosedMidPublishDetaches: a sender that stopped between a record's word and its tail
// store (killed there) leaves the tail behind the head once the record is read; its ring is
// still detached once drained.
func TestClosedMidPublishDetaches(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "mp", 1)
	o := mustDial(t, dir, "mp", 0)
	in.Refresh()
	tail := atomic.LoadUint64(o.p.tailp)
	if _, err := o.Send(nil, [][]byte{[]byte("last")}, 4); err != nil {
		t.Fatal(err)
	}
	atomic.StoreUint64(o.p.tailp, tail) // as if killed before the tail store
	if _, d, err := drainOne(in); err != nil || string(d) != "last" {
		t.Fatalf("record published by its word only: %q %v", d, err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	in.Refresh()
	if len(in.Stats()) != 0 || len(dirFiles(t, dir)) != 1 {
		t.Fatalf("drained ring with its tail behind the head still there: stats %v files %v", in.Stats(), dirFiles(t, dir))
	}
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run /bin/true: %v", err)
	}
	return cmd.Process.Pid
}

func TestProcessAlive(t *testing.T) {
	pid, start, err := selfIdentity()
	if err != nil || pid != os.Getpid() || start == 0 {
		t.Fatalf("selfIdentity: %d %d %v", pid, start, err)
	}
	if !processAlive(pid, start) || !processAlive(pid, 0) {
		t.Fatalf("self not alive")
	}
	if processAlive(pid, start+1) {
		t.Fatalf("reused pid (other start time) taken as alive")
	}
	if dead := deadPID(t); processAlive(dead, 0) {
		t.Fatalf("exited pid %d alive", dead)
	}
	for _, p := range []int{0, -1, 1<<22 + 1} {
		if processAlive(p, 0) {
			t.Fatalf("pid %d alive", p)
		}
	}
	st, s, ok := statStart([]byte("42 (a) b) (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21\n"))
	if !ok || st != 'S' || s != 987654 {
		t.Fatalf("statStart: %c %d %v", st, s, ok)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "1 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x9"} {
		if _, _, ok := statStart([]byte(bad)); ok {
			t.Fatalf("statStart(%q) ok", bad)
		}
	}
}

// writeSlot forges a registered slot, as a (possibly dead or lying) sender would.
func writeSlot(in *Inbox, i, pid int, start, id uint64) {
	base := slotTableOff + i*slotSize
	t := atomic.LoadUint64(word64(in.mem, base+slTag))
	atomic.StoreUint64(word64(in.mem, base+slStart), start)
	atomic.StoreUint64(word64(in.mem, base+slID), id)
	atomic.StoreUint64(word64(in.mem, base+slTag), claimTag(pid, t)|tagReady)
	atomic.AddUint64(in.genp, 1)
}

// TestReclaimDeadSlot: a slot held by a dead process, or by a reused pid (same pid, another
// start time), is taken over by a new sender, and the dead ring file removed.
func TestReclaimDeadSlot(t *testing.T) {
	_, start, _ := selfIdentity()
	for _, c := range []struct {
		name  string
		pid   int
		start uint64
	}{{"dead", deadPID(t), 12345}, {"reused", os.Getpid(), start + 1}} {
		t.Run(c.name, func(t *testing.T) {
			dir := testDir(t)
			in := mustInbox(t, dir, "rc", 1)
			stale := shmseg.Join(dir, ringName("rc", c.pid, 9))
			if err := os.WriteFile(stale, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			writeSlot(in, 0, c.pid, c.start, 9)
			in.Refresh() // the forged ring file is empty: attach fails, counted
			if in.AttachFailures() != 1 {
				t.Fatalf("attach failures %d", in.AttachFailures())
			}
			o := mustDial(t, dir, "rc", 0)
			if _, err := os.Stat(stale); !os.IsNotExist(err) {
				t.Fatalf("dead sender's ring file not removed: %v", err)
			}
			if _, err := o.Send(nil, [][]byte{[]byte("hi")}, 2); err != nil {
				t.Fatal(err)
			}
			if _, d, err := drainOne(in); err != nil || string(d) != "hi" {
				t.Fatalf("%q %v", d, err)
			}
		})
	}
}

// TestLiveSlotNotReclaimed: a live sender's slot is never taken.
func TestLiveSlotNotReclaimed(t *testing.T) {
	dir := testDir(t)
	mustInbox(t, dir, "live", 1)
	mustDial(t, dir, "live", 0)
	if _, err := DialInbox(dir, "live", 0); !errors.Is(err, ErrFull) {
		t.Fatalf("dial over a live slot: %v", err)
	}
}

// TestDeadSenderDetached: the receiver drains and detaches the ring of a sender that died
// without closing (faked: the ring's recorded start time no longer matches our pid's).
func TestDeadSenderDetached(t *testing.T) {
	old := sweepInterval
	sweepInterval = 0
	defer func() { sweepInterval = old }()
	dir := testDir(t)
	in := mustInbox(t, dir, "dead", 2)
	o := mustDial(t, dir, "dead", 0)
	if _, err := o.Send(nil, [][]byte{[]byte("last words")}, 10); err != nil {
		t.Fatal(err)
	}
	in.Refresh()
	in.rings[0].start++ // as if the pid now belonged to another process
	for range 128 {
		in.Refresh()
	}
	if len(in.rings) != 1 {
		t.Fatalf("ring with data detached")
	}
	if _, d, err := drainOne(in); err != nil || string(d) != "last words" {
		t.Fatalf("%q %v", d, err)
	}
	in.Refresh()
	if len(in.rings) != 0 || len(dirFiles(t, dir)) != 1 {
		t.Fatalf("dead drained ring not detached: %d rings, files %v", len(in.rings), dirFiles(t, dir))
	}
	if !o.Closed() {
		t.Fatalf("sender does not see the detach")
	}
	if _, err := o.Send(nil, [][]byte{[]byte("x")}, 1); err != ErrClosed {
		t.Fatalf("send on detached ring: %v", err)
	}
	// The slot is free again.
	mustDial(t, dir, "dead", 0)
	mustDial(t, dir, "dead", 0)
}

// TestCorruptRingDetached: a ring whose tail is impossible is detached and counted, the other
// rings keep working, the sender gets ErrClosed.
func TestCorruptRingDetached(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "bad", 2)
	good := mustDial(t, dir, "bad", 0)
	bad := mustDial(t, dir, "bad", 0)
	in.Refresh()
	if _, err := good.Send(nil, [][]byte{[]byte("fine")}, 4); err != nil {
		t.Fatal(err)
	}
	atomic.StoreUint64(bad.p.tailp, 3*bad.p.cap)
	seen := false
	for range tailCheck + 3 { // the consumer looks at a tail every tailCheck empty polls
		_, d, err := drainOne(in)
		if err == nil && string(d) == "fine" {
			seen = true
		}
	}
	if !seen || in.CorruptRings() != 1 || len(in.rings) != 1 {
		t.Fatalf("seen %v corrupt %d rings %d", seen, in.CorruptRings(), len(in.rings))
	}
	if _, err := bad.Send(nil, [][]byte{[]byte("x")}, 1); err != ErrClosed {
		t.Fatalf("send on detached ring: %v", err)
	}
	if _, err := os.Stat(bad.ringPath); !os.IsNotExist(err) {
		t.Fatalf("corrupt ring file not removed: %v", err)
	}
	if _, err := os.Stat(good.ringPath); err != nil {
		t.Fatalf("good ring file: %v", err)
	}
}

// TestAttachRejects: ring files that are not what the slot says are refused, counted, and
// not retried until the slot changes.
func TestAttachRejects(t *testing.T) {
	_, start, _ := selfIdentity()
	pid := os.Getpid()
	cases := []struct {
		name  string
		setup func(t *testing.T, dir, path string)
	}{
		{"missing", func(*testing.T, string, string) {}},
		{"symlink", func(t *testing.T, dir, path string) {
			o := mustDial(t, dir, "ar", 0)
			os.Symlink(o.ringPath, path)
		}},
		{"mode", func(t *testing.T, dir, path string) {
			mem, err := createSegment(path, ringDataOff+MinRingBytes)
			if err != nil {
				t.Fatal(err)
			}
			initRing(mem, MinRingBytes, pid, start, 5)
			shmseg.Unmap(mem)
			os.Chmod(path, 0o644)
		}},
		{"size", func(t *testing.T, dir, path string) {
			mem, err := createSegment(path, ringDataOff+2*MinRingBytes)
			if err != nil {
				t.Fatal(err)
			}
			initRing(mem, MinRingBytes, pid, start, 5)
			shmseg.Unmap(mem)
		}},
		{"identity", func(t *testing.T, dir, path string) {
			mem, err := createSegment(path, ringDataOff+MinRingBytes)
			if err != nil {
				t.Fatal(err)
			}
			initRing(mem, MinRingBytes, pid, start+1, 5)
			shmseg.Unmap(mem)
		}},
		{"magic", func(t *testing.T, dir, path string) {
			mem, err := createSegment(path, ringDataOff+MinRingBytes)
			if err != nil {
				t.Fatal(err)
			}
			initRing(mem, MinRingBytes, pid, start, 5)
			atomic.StoreUint64(word64(mem, rgVersion), 99)
			shmseg.Unmap(mem)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testDir(t)
			in := mustInbox(t, dir, "ar", 4)
			in.Refresh()
			path := shmseg.Join(dir, ringName("ar", pid, 5))
			c.setup(t, dir, path)
			writeSlot(in, 3, pid, start, 5)
			in.Refresh()
			in.Refresh()
			atomic.AddUint64(in.genp, 1)
			in.Refresh()
			if in.AttachFailures() != 1 {
				t.Fatalf("attach failures %d", in.AttachFailures())
			}
			if in.bySlot[3] != nil {
				t.Fatalf("bad ring attached")
			}
			os.Remove(path)
		})
	}
}

// TestStaleInbox: CreateInbox replaces the file of a dead owner, not of a live one; senders
// refuse an inbox whose owner is dead.
func TestStaleInbox(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "st", 1)
	if _, err := CreateInbox(dir, "st", 1); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("create over a live inbox: %v", err)
	}
	atomic.StoreUint64(word64(in.mem, ibPID), uint64(deadPID(t)))
	if _, err := DialInbox(dir, "st", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("dial an inbox of a dead owner: %v", err)
	}
	in2, err := CreateInbox(dir, "st", 1)
	if err != nil {
		t.Fatalf("create over a dead inbox: %v", err)
	}
	in2.Close()
}

func TestBadArguments(t *testing.T) {
	dir := testDir(t)
	for _, n := range []string{"", ".", "..", "a/b", string(make([]byte, 64))} {
		if _, err := CreateInbox(dir, n, 1); err == nil {
			t.Fatalf("CreateInbox(%q) ok", n)
		}
		if _, err := DialInbox(dir, n, 0); err == nil {
			t.Fatalf("DialInbox(%q) ok", n)
		}
	}
	for _, s := range []int{0, -1, MaxSlots + 1} {
		if _, err := CreateInbox(dir, "x", s); err == nil {
			t.Fatalf("CreateInbox with %d slots ok", s)
		}
	}
	mustInbox(t, dir, "x", 1)
	if _, err := DialInbox(dir, "x", MaxRingBytes+1); !errors.Is(err, ErrTooBig) {
		t.Fatalf("huge ring: %v", err)
	}
	if err := os.WriteFile(shmseg.Join(dir, "junk"), make([]byte, inboxSize(1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := DialInbox(dir, "junk", 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("dial junk: %v", err)
	}
	if f := dirFiles(t, dir); len(f) != 2 {
		t.Fatalf("files %v", f)
	}
}

// TestNoSpace: a file system without room gives ErrNoSpace at creation.
func TestNoSpace(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	in, err := CreateInbox(dir, "ns", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, err := DialInbox(dir, "ns", 1<<20); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("ring larger than the file system: %v", err)
	}
	if f := dirFiles(t, dir); len(f) != 1 {
		t.Fatalf("files after failed dial: %v", f)
	}
}

// TestInboxSumStats: SumStats is the sum of Stats over the rings, without allocating.
func TestInboxSumStats(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "sum", 4)
	buf := make([]byte, 64)
	for s := range 3 {
		o := mustDial(t, dir, "sum", 0)
		for seq := range uint64(s + 1) {
			if _, err := o.Send(nil, [][]byte{makeRecord(buf, uint32(s), seq, 32)}, 32); err != nil {
				t.Fatal(err)
			}
		}
	}
	in.Refresh()
	var want [3]uint64
	for _, st := range in.Stats() {
		want[0] += st.Drops
		want[1] += st.Wakes
		want[2] += st.DepthRecords
	}
	d, w, r := in.SumStats()
	if [3]uint64{d, w, r} != want || r != 6 {
		t.Fatalf("SumStats = %d %d %d, Stats sum %v (want depth 6)", d, w, r, want)
	}
	if a := testing.AllocsPerRun(100, func() { in.SumStats() }); a != 0 {
		t.Fatalf("SumStats: %.1f allocations", a)
	}
}

// TestInboxAfterKernel: a record sent with SendAfterKernel is reported by TakeAfterKernel once,
// however often it is peeked before it is popped; records sent with Send never are, before it
// or after it, and the payloads arrive in the order sent.
func TestInboxAfterKernel(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "after", 4)
	o := mustDial(t, dir, "after", 0)
	for i, after := range []bool{false, true, false} {
		send := o.Send
		if after {
			send = o.SendAfterKernel
		}
		if _, err := send(nil, [][]byte{{byte(i)}}, 1); err != nil {
			t.Fatal(err)
		}
	}
	in.Refresh()
	for i, want := range []bool{false, true, false} {
		_, data, err := in.Peek()
		if err != nil || len(data) != 1 || data[0] != byte(i) {
			t.Fatalf("record %d: %v %v", i, data, err)
		}
		if got := in.PeekedAfterKernel(); got != want {
			t.Errorf("record %d: PeekedAfterKernel %v, want %v", i, got, want)
		}
		if got := in.TakeAfterKernel(); got != want {
			t.Errorf("record %d: TakeAfterKernel %v, want %v", i, got, want)
		}
		if _, _, err := in.Peek(); err != nil {
			t.Fatal(err)
		}
		if in.PeekedAfterKernel() || in.TakeAfterKernel() {
			t.Errorf("record %d: reported again at its second peek", i)
		}
		in.Pop()
	}
}

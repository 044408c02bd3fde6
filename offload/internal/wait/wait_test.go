package wait

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/transporttest"
)

func TestCheckSignals(t *testing.T) {
	var sig transport.SigCounters
	signals := func() *transport.SigCounters { return &sig }

	var w Call
	w.Start(0, signals)
	if e := w.Check(); e != 0 || w.Interrupted() {
		t.Fatalf("fresh wait: %v, interrupted %v", e, w.Interrupted())
	}
	atomic.AddUint32(&sig.All, 1) // an SA_RESTART handler
	if e := w.Check(); e != 0 {
		t.Fatalf("a receive without timeout restarts after an SA_RESTART handler, got %v", e)
	}
	if !w.Interrupted() {
		t.Fatal("select, poll and epoll end after any handler")
	}
	atomic.AddUint32(&sig.All, 1)
	atomic.AddUint32(&sig.Interrupting, 1) // a handler without SA_RESTART
	if e := w.Check(); e != unix.EINTR {
		t.Fatalf("after a handler without SA_RESTART: %v, want EINTR", e)
	}

	var timed Call
	transporttest.EnterCall(&sig) // a new call
	timed.Start(int64(time.Hour), signals)
	atomic.AddUint32(&sig.All, 1)
	if e := timed.Check(); e != unix.EINTR {
		t.Fatalf("a receive with SO_RCVTIMEO after an SA_RESTART handler: %v, want EINTR", e)
	}
}

// A handler deferred while the thread ran the engine's code (shim/preload/signal.c) ends a wait
// the kernel would restart with ErrRestart (it runs in C, then the call again), and one the kernel
// would end with EINTR still ends it so.
func TestCheckDeferred(t *testing.T) {
	var sig transport.SigCounters
	signals := func() *transport.SigCounters { return &sig }
	var w Call
	w.Start(0, signals)
	atomic.AddUint32(&sig.All, 1)
	atomic.AddUint32(&sig.Deferred, 1) // an SA_RESTART handler, deferred
	if e := w.Check(); e != transport.ErrRestart {
		t.Fatalf("after a deferred SA_RESTART handler: %v, want ErrRestart", e)
	}
	var x Call
	transporttest.EnterCall(&sig) // a new call
	x.Start(0, signals)
	atomic.AddUint32(&sig.All, 1)
	atomic.AddUint32(&sig.Interrupting, 1)
	atomic.AddUint32(&sig.Deferred, 1) // a handler without SA_RESTART, deferred
	if e := x.Check(); e != unix.EINTR {
		t.Fatalf("after a deferred handler without SA_RESTART: %v, want EINTR", e)
	}
}

// A handler deferred after the call entered the engine and before its wait started (a receive
// starts its wait after its first look) ends the wait all the same: the wait compares with the
// counters at the entry. Compared with the counters at its start it waited on, its handler
// deferred until the call's end: the hang of TestShmSignals/poll-forever in CI.
func TestCheckDeferredBeforeStart(t *testing.T) {
	var sig transport.SigCounters
	signals := func() *transport.SigCounters { return &sig }
	for _, restart := range []bool{false, true} {
		transporttest.EnterCall(&sig)
		atomic.AddUint32(&sig.All, 1)
		if !restart {
			atomic.AddUint32(&sig.Interrupting, 1)
		}
		atomic.AddUint32(&sig.Deferred, 1)
		var w Call
		w.Start(0, signals)
		want := unix.EINTR
		if restart {
			want = transport.ErrRestart
		}
		if e := w.Check(); e != want {
			t.Errorf("SA_RESTART %v, deferred before the start: %v, want %v", restart, e, want)
		}
		if !w.Interrupted() {
			t.Errorf("SA_RESTART %v, deferred before the start: select, poll and epoll go on", restart)
		}
	}
}

// Arm gives a sleep the thread's Wake: the timeout asked for (none: far away), zero when a
// handler was deferred during the call already; and a deferral after Arm (the trampoline zeroes
// Wake) makes the sleep return at once.
func TestArm(t *testing.T) {
	var none Call
	none.Start(0, nil)
	ts := unix.NsecToTimespec(5e6)
	if got := none.Arm(&ts); got != &ts {
		t.Fatal("a wait without counters sleeps on its own timeout")
	}

	var sig transport.SigCounters
	transporttest.EnterCall(&sig)
	var w Call
	w.Start(0, func() *transport.SigCounters { return &sig })
	got := w.Arm(nil)
	if got != &sig.Wake || got.Sec != farAway || got.Nsec != 0 {
		t.Fatalf("Arm(nil) = %p %+v, want the counters' Wake, %d s", got, *got, farAway)
	}
	if got = w.Arm(&ts); got.Nano() != 5e6 {
		t.Fatalf("Arm(5 ms) = %+v", *got)
	}
	got = w.Arm(nil) // a sleep without end, then the trampoline's deferral: Wake zeroed, Deferred counted
	atomic.StoreInt64(&sig.Wake.Sec, 0)
	atomic.StoreInt64(&sig.Wake.Nsec, 0)
	atomic.AddUint32(&sig.Deferred, 1)
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	fds := []unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}}
	start := time.Now()
	if n, err := unix.Ppoll(fds, got, nil); n != 0 || err != nil {
		t.Fatalf("ppoll on the zeroed Wake: %d %v", n, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a sleep armed before the deferral slept %v", d)
	}
	// Armed again after the deferral (the wait looked once more): zero at once.
	if got = w.Arm(nil); got.Sec != 0 || got.Nsec != 0 {
		t.Fatalf("Arm after a deferral = %+v, want 0", *got)
	}
}

func TestDeadline(t *testing.T) {
	var w Call
	w.Start(int64(20*time.Millisecond), nil)
	if e := w.Check(); e != 0 {
		t.Fatalf("before the deadline: %v", e)
	}
	if ts := w.Timeout(0); ts == nil || ts.Nano() <= 0 || ts.Nano() > int64(20*time.Millisecond) {
		t.Fatalf("remaining %v", ts)
	}
	time.Sleep(30 * time.Millisecond)
	if e := w.Check(); e != unix.EAGAIN {
		t.Fatalf("after the deadline: %v, want EAGAIN", e)
	}
	if ts := w.Timeout(0); ts == nil || ts.Nano() != 0 {
		t.Fatalf("remaining after the deadline %v, want 0", ts)
	}
	var forever Call
	forever.Start(0, nil)
	if forever.Timeout(0) != nil || forever.Check() != 0 || forever.Interrupted() {
		t.Fatal("a wait without deadline or counters has nothing to end it")
	}
}

func TestSpinElapsed(t *testing.T) {
	var s Spin
	s.Begin(1000)
	for range 100 {
		s.Poll(1000) // within YieldAfter: never yields (nothing observable but no panic)
	}
	if s.Elapsed(5000) != 4000 {
		t.Fatalf("elapsed %d", s.Elapsed(5000))
	}
}

package wait

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
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
	x.Start(0, signals)
	atomic.AddUint32(&sig.All, 1)
	atomic.AddUint32(&sig.Interrupting, 1)
	atomic.AddUint32(&sig.Deferred, 1) // a handler without SA_RESTART, deferred
	if e := x.Check(); e != unix.EINTR {
		t.Fatalf("after a deferred handler without SA_RESTART: %v, want EINTR", e)
	}
}

func TestDeadline(t *testing.T) {
	var w Call
	w.Start(int64(20*time.Millisecond), nil)
	if e := w.Check(); e != 0 {
		t.Fatalf("before the deadline: %v", e)
	}
	if ts := w.Remaining(); ts == nil || ts.Nano() <= 0 || ts.Nano() > int64(20*time.Millisecond) {
		t.Fatalf("remaining %v", ts)
	}
	time.Sleep(30 * time.Millisecond)
	if e := w.Check(); e != unix.EAGAIN {
		t.Fatalf("after the deadline: %v, want EAGAIN", e)
	}
	if ts := w.Remaining(); ts == nil || ts.Nano() != 0 {
		t.Fatalf("remaining after the deadline %v, want 0", ts)
	}
	var forever Call
	forever.Start(0, nil)
	if forever.Remaining() != nil || forever.Check() != 0 || forever.Interrupted() {
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

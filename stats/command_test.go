package stats

import (
	"errors"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// recorder is a CommandHandler that remembers what it was asked.
type recorder struct {
	calls []string
}

func (r *recorder) SetLogLevel(level int) { r.calls = append(r.calls, "level "+strconv.Itoa(level)) }
func (r *recorder) SetLogDetails(n int)   { r.calls = append(r.calls, "details "+strconv.Itoa(n)) }
func (r *recorder) DumpFD(fd int, lvl int) {
	r.calls = append(r.calls, "dump "+strconv.Itoa(fd)+" "+strconv.Itoa(lvl))
}

func TestCommandsRoundTrip(t *testing.T) {
	w := newWriter(t, 4)
	seg := openReader(t, w)
	rec := &recorder{}
	if n := w.PollCommands(rec); n != 0 {
		t.Fatalf("idle poll ran %d commands", n)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			w.PollCommands(rec)
			time.Sleep(100 * time.Microsecond)
		}
	}()
	post := func(kind CommandKind, a1, a2 int64) int {
		t.Helper()
		c, err := seg.Post(kind, a1, a2)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Wait(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r := post(CmdSetLogLevel, LogDebug, 0); r != ResultApplied {
		t.Errorf("set log level result %d", r)
	}
	if r := post(CmdSetLogDetails, 3, 0); r != ResultApplied {
		t.Errorf("set details result %d", r)
	}
	if r := post(CmdDumpFD, -1, LogInfo); r != ResultApplied {
		t.Errorf("dump result %d", r)
	}
	if r := post(CmdSetLogLevel, 42, 0); r != ResultRejected {
		t.Errorf("out-of-range level result %d", r)
	}
	if r := post(CommandKind(77), 0, 0); r != ResultRejected {
		t.Errorf("unknown kind result %d", r)
	}
	// Many in a row: slots are recycled.
	for i := range 50 {
		if r := post(CmdDumpFD, int64(i), LogFine); r != ResultApplied {
			t.Fatalf("dump %d result %d", i, r)
		}
	}
	close(stop)
	<-done
	want := []string{"level 5", "details 3", "dump -1 3"}
	for i, c := range want {
		if rec.calls[i] != c {
			t.Fatalf("calls %v, want prefix %v", rec.calls, want)
		}
	}
	if len(rec.calls) != 53 {
		t.Errorf("%d calls, want 53", len(rec.calls))
	}
	if g := snapshot(t, seg).Global; g.CommandsApplied != 55 {
		t.Errorf("commands applied %d, want 55", g.CommandsApplied)
	}
}

func TestCommandTimeoutAndBusy(t *testing.T) {
	w := newWriter(t, 4)
	seg := openReader(t, w)
	c, err := seg.Post(CmdSetLogLevel, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Wait(50 * time.Millisecond); !errors.Is(err, ErrCommandTimeout) {
		t.Fatalf("wait without a poller: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("timeout took %v", time.Since(start))
	}
	// The withdrawn command must not run later.
	rec := &recorder{}
	w.PollCommands(rec)
	if len(rec.calls) != 0 {
		t.Errorf("withdrawn command ran: %v", rec.calls)
	}
	for range cmdSlots {
		if _, err := seg.Post(CmdSetLogDetails, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := seg.Post(CmdSetLogDetails, 1, 0); !errors.Is(err, ErrCommandBusy) {
		t.Fatalf("9th pending command: %v", err)
	}
	if n := w.PollCommands(nil); n != cmdSlots {
		t.Fatalf("nil handler acknowledged %d, want %d", n, cmdSlots)
	}
	ro := *seg
	ro.writable = false
	if _, err := ro.Post(CmdSetLogLevel, 1, 0); !errors.Is(err, ErrReadOnly) {
		t.Errorf("post on read-only: %v", err)
	}
	if err := ro.Zero(nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("zero on read-only: %v", err)
	}
}

// TestPollCommandsIdleIsOneLoad checks the idle path does not touch the
// command slots: a garbage slot state is ignored until a post is signalled.
func TestPollCommandsIdleIsOneLoad(t *testing.T) {
	w := newWriter(t, 4)
	c := cmdSlot(w.mem, w.geo, 0)
	atomic.StoreUint64(&c[cKind], uint64(CmdSetLogLevel))
	atomic.StoreUint64(&c[cState], cmdPosted)
	rec := &recorder{}
	if n := w.PollCommands(rec); n != 0 {
		t.Fatalf("idle poll ran %d", n)
	}
	atomic.AddUint64(&w.hdr[hCmdPosted], 1)
	if n := w.PollCommands(rec); n != 1 {
		t.Fatalf("signalled poll ran %d", n)
	}
}

func TestCommandWait(t *testing.T) {
	w := newWriter(t, 4)
	seg := openReader(t, w)
	start := time.Now()
	if w.CommandWait(30 * time.Millisecond) {
		t.Fatal("CommandWait reported a command with none posted")
	}
	if d := time.Since(start); d < 25*time.Millisecond || d > 5*time.Second {
		t.Errorf("CommandWait(30ms) returned after %v", d)
	}
	// A post from the reader wakes a waiter that would otherwise sleep 60s.
	woke := make(chan time.Duration, 1)
	go func() {
		s := time.Now()
		ok := w.CommandWait(60 * time.Second)
		if !ok {
			woke <- -1
			return
		}
		woke <- time.Since(s)
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := seg.Post(CmdSetLogDetails, 1, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-woke:
		if d < 0 {
			t.Fatal("CommandWait woke without a command")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the post did not wake CommandWait")
	}
	// Pending and not yet polled: no sleep at all.
	if !w.CommandWait(time.Hour) {
		t.Fatal("CommandWait slept with a command pending")
	}
	rec := &recorder{}
	if w.PollCommands(rec) != 1 || len(rec.calls) != 1 {
		t.Fatalf("poll after wake: %v", rec.calls)
	}
	var nilW *Writer
	if nilW.CommandWait(time.Hour) {
		t.Error("nil writer reported a command")
	}
}

package shm

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// The wake protocols are Dekker's pattern: each side stores its own word, then loads the other
// side's, and sequential consistency promises that at least one of them sees the other's store.
// A store the processor still holds in its store buffer when the next load runs breaks that
// promise, but only when both sides hit the window at the same instant on two cores: the
// stress tests in wake_test.go and stream_wake_test.go see it as a sleep that never ends, in
// a few runs out of many. The tests here run the two halves of one exchange at the same moment
// on two threads, hundreds of thousands of times, and check the promise after every round: no
// sleeping, no timeout, a violation is reported when it happens. How often the window is hit
// depends on the machine (how the two threads share cores with others): a broken ordering
// fails here in most runs, not all.

// lockstep runs a on this goroutine and b on another thread, both released at the same moment
// (one of them after a random delay of up to a microsecond or so, so that the offsets at which
// the two critical stores meet get tried), for rounds rounds or until budget has passed. After
// each round, with both halves done, settle checks the outcome (false: the round broke the
// protocol) and prepares the next round. It returns the rounds run and the violations seen; it
// stops early after a few violations.
func lockstep(t *testing.T, rounds int, budget time.Duration, a, b func(), settle func() bool) (ran, bad int) {
	t.Helper()
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		t.Logf("one CPU: the two halves cannot overlap, the rounds only check the sequential outcome")
	}
	var gate, done atomic.Int64 // round released, round b finished
	var stop atomic.Bool
	var delayB int // written before gate, read after it
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		sink := 0
		for i := int64(1); ; i++ {
			for k := 0; gate.Load() < i; k++ {
				if k&255 == 255 {
					runtime.Gosched() // the machine may have fewer free cores than threads here
				}
			}
			if stop.Load() {
				done.Store(i)
				return
			}
			spinDelay(delayB, &sink)
			b()
			done.Store(i)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewPCG(uint64(rounds), 3))
	sink := 0
	deadline := time.Now().Add(budget)
	i := int64(0)
	for ran < rounds && bad < 5 && (ran&1023 != 0 || time.Now().Before(deadline)) {
		i++
		span := 64 // a few tens of nanoseconds either way
		if rng.IntN(2) == 0 {
			span = 2048 // the two halves' paths differ by hundreds of nanoseconds
		}
		d := rng.IntN(span)
		delayA := 0
		if d&1 == 0 {
			delayA, delayB = d>>1, 0
		} else {
			delayA, delayB = 0, d>>1
		}
		gate.Store(i)
		spinDelay(delayA, &sink)
		a()
		for k := 0; done.Load() < i; k++ {
			if k&255 == 255 {
				runtime.Gosched()
			}
		}
		ran++
		if !settle() {
			bad++
		}
	}
	stop.Store(true)
	gate.Store(i + 1)
	for done.Load() < i+1 {
		runtime.Gosched()
	}
	return ran, bad
}

// spinDelay burns about n short steps of one core (sink keeps the compiler from dropping them).
//
//go:noinline
func spinDelay(n int, sink *int) {
	s := *sink
	for i := range n {
		s += i ^ s
	}
	*sink = s
}

const (
	orderRounds = 300000
	orderBudget = 3 * time.Second
)

// TestStreamWakeOrderSpace: the writer registers for one byte of space (WaitSpace) while the
// reader frees one byte of a full ring (Read). Either the writer sees the byte (ready) or the
// reader sees the registration (wake); both missing is a writer asleep for good.
func TestStreamWakeOrderSpace(t *testing.T) {
	a, b := connPair(t, testDir(t), 4096, 4096)
	capTx, _ := a.Capacities()
	if n, _, err := a.Write([][]byte{make([]byte, capTx)}); n != capTx || err != nil {
		t.Fatalf("fill: %d, %v", n, err)
	}
	var ready, wake bool
	var n int
	one, got := []byte{7}, make([]byte, 1)
	ran, bad := lockstep(t, orderRounds, orderBudget,
		func() { ready = a.WaitSpace(1) },
		func() { n, wake, _ = b.Read([][]byte{got}) },
		func() bool {
			ok := n != 1 || ready || wake
			if !ok {
				t.Errorf("lost space wake-up: the writer found the ring full and the reader saw no waiting writer")
			}
			a.CancelWaitSpace()
			if n == 1 {
				if m, _, err := a.Write([][]byte{one}); m != 1 || err != nil {
					t.Fatalf("refill: %d, %v", m, err)
				}
			}
			b.ClearWake()
			return ok
		})
	t.Logf("%d rounds, %d lost wake-ups", ran, bad)
}

// TestStreamWakeOrderData: the writer publishes one byte (Write) while the reader stops
// spinning (SpinEnd) and checks the ring once more (Read). Either the reader gets the byte or
// the writer sees no spinner and asks for a wake-up.
func TestStreamWakeOrderData(t *testing.T) {
	a, b := connPair(t, testDir(t), 4096, 4096)
	var n int
	var wake bool
	one, got := []byte{7}, make([]byte, 1)
	b.SpinBegin()
	ran, bad := lockstep(t, orderRounds, orderBudget,
		func() { _, wake, _ = a.Write([][]byte{one}) },
		func() { b.SpinEnd(); n, _, _ = b.Read([][]byte{got}) },
		func() bool {
			ok := n == 1 || wake
			if !ok {
				t.Errorf("lost data wake-up: the writer saw a spinner, the reader after SpinEnd an empty ring")
			}
			if n == 0 {
				if m, _, err := b.Read([][]byte{got}); m != 1 || err != nil {
					t.Fatalf("drain: %d, %v", m, err)
				}
			}
			b.ClearWake()
			b.SpinBegin()
			return ok
		})
	b.SpinEnd()
	t.Logf("%d rounds, %d lost wake-ups", ran, bad)
}

// TestStreamWakeOrderClear: a data wake-up is pending; the reader takes it (ClearWake) and
// checks the ring (Read) while the writer publishes one byte (Write). Either the reader gets
// the byte or the writer sees the flag cleared and asks for a new wake-up.
func TestStreamWakeOrderClear(t *testing.T) {
	a, b := connPair(t, testDir(t), 4096, 4096)
	var n int
	var wake bool
	one, got := []byte{7}, make([]byte, 1)
	arm := func() { // one byte written and read with its wake-up left pending
		if !b.WakePending() {
			if _, w, err := a.Write([][]byte{one}); !w || err != nil {
				t.Fatalf("arm: wake %v, %v", w, err)
			}
			if m, _, err := b.Read([][]byte{got}); m != 1 || err != nil {
				t.Fatalf("arm: read %d, %v", m, err)
			}
		}
	}
	arm()
	ran, bad := lockstep(t, orderRounds, orderBudget,
		func() { _, wake, _ = a.Write([][]byte{one}) },
		func() { b.ClearWake(); n, _, _ = b.Read([][]byte{got}) },
		func() bool {
			ok := n == 1 || wake
			if !ok {
				t.Errorf("lost data wake-up: the writer saw a pending wake-up, the reader after ClearWake an empty ring")
			}
			if n == 0 {
				if m, _, err := b.Read([][]byte{got}); m != 1 || err != nil {
					t.Fatalf("drain: %d, %v", m, err)
				}
			}
			arm()
			return ok
		})
	t.Logf("%d rounds, %d lost wake-ups", ran, bad)
}

// TestWakeOrderInbox: a sender publishes one datagram (Send) while the receiver stops spinning
// (SpinEnd) and checks (Pending). Either the receiver sees the datagram or the sender sees no
// spinner and asks for a wake-up.
func TestWakeOrderInbox(t *testing.T) {
	dir := testDir(t)
	in := mustInbox(t, dir, "order", 2)
	o := mustDial(t, dir, "order", 4096)
	in.Refresh()
	var pending, wake bool
	payload := [][]byte{{7}}
	in.SpinBegin()
	ran, bad := lockstep(t, orderRounds, orderBudget,
		func() {
			var err error
			if wake, err = o.Send(nil, payload, 1); err != nil {
				t.Errorf("send: %v", err)
			}
		},
		func() { in.SpinEnd(); pending = in.Pending() },
		func() bool {
			ok := pending || wake
			if !ok {
				t.Errorf("lost wake-up: the sender saw a spinner, the receiver after SpinEnd nothing pending")
			}
			if _, _, err := drainOne(in); err != nil {
				t.Fatalf("drain: %v", err)
			}
			in.ClearWake()
			in.SpinBegin()
			return ok
		})
	in.SpinEnd()
	t.Logf("%d rounds, %d lost wake-ups", ran, bad)
}

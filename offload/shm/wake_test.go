package shm

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWakeStress runs the wake protocol with goroutines standing in for processes: senders
// publish and, when Send says so, post a wake "datagram" on a channel of capacity one (the
// protocol allows at most one in flight: a full channel is a failure); the receiver polls for a
// while, stops spinning, re-checks Pending and then sleeps on the channel. A sleep that lasts
// seconds while data is waiting is a lost wake-up. Senders also re-dial now and then (rings
// detach and unmap while another goroutine calls Pending), so the race detector and the fault
// handler watch the retire logic too.
func TestWakeStress(t *testing.T) {
	const (
		senders   = 3
		perSender = 20000
		redial    = 500
	)
	dir := testDir(t)
	in := mustInbox(t, dir, "wake", 8)
	wakeCh := make(chan struct{}, 1)
	var failed atomic.Value
	fail := func(msg string) { failed.CompareAndSwap(nil, msg) }
	var wakes atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(60 * time.Second)

	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(s), 1))
			buf := make([]byte, 2000)
			var o *Outlet
			for seq := uint64(0); seq < perSender; {
				if o == nil || seq%redial == 0 && o.Stats().Pushed > 0 {
					if o != nil {
						o.Close()
					}
					var err error
					if o, err = DialInbox(dir, "wake", 8192); err != nil {
						fail("dial: " + err.Error())
						return
					}
				}
				size := sizeFor(seq)
				epoch := uint32(s*1000) + uint32(seq/redial)
				wake, err := o.Send(nil, [][]byte{makeRecord(buf, epoch, seq, size)}, size)
				if err == ErrFull {
					if time.Now().After(deadline) || failed.Load() != nil {
						fail("sender stuck on a full ring")
						return
					}
					runtime.Gosched()
					continue
				}
				if err != nil {
					fail("send: " + err.Error())
					return
				}
				if wake {
					wakes.Add(1)
					select {
					case wakeCh <- struct{}{}:
					default:
						fail("a second wake-up while one is pending")
					}
				}
				seq++
				// Idle gaps of varying length, so the receiver falls asleep often.
				switch rng.IntN(8) {
				case 0:
					time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
				case 1:
					runtime.Gosched()
				}
			}
			o.Close()
		}()
	}

	// Another thread of the receiving program asking Pending all the time.
	stop := make(chan struct{})
	var pendingCalls atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			in.Pending()
			pendingCalls.Add(1)
			runtime.Gosched()
		}
	}()
	defer close(stop)

	next := map[uint32]uint64{}
	got, sleeps := 0, 0
	rng := rand.New(rand.NewPCG(99, 1))
	for got < senders*perSender && failed.Load() == nil {
		in.SpinBegin()
		for spins := rng.IntN(4); spins < 4; spins++ {
			in.Refresh()
			for {
				_, d, err := in.Peek()
				if err != nil {
					break
				}
				epoch, seq, ok := checkRecord(d)
				if !ok {
					t.Fatalf("torn or corrupt record")
				}
				if first, seen := next[epoch]; seen && seq != first {
					t.Fatalf("epoch %d: seq %d, want %d", epoch, seq, first)
				}
				next[epoch] = seq + 1
				in.Pop()
				got++
				spins = 0
			}
		}
		in.SpinEnd()
		if in.Pending() || got == senders*perSender {
			continue
		}
		sleeps++
		select {
		case <-wakeCh:
			in.ClearWake()
		case <-time.After(3 * time.Second):
			in.Refresh()
			_, _, err := in.Peek()
			t.Fatalf("lost wake-up: asleep 3 s with %d of %d received (Peek after: %v)", got, senders*perSender, err)
		}
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		t.Fatal(f)
	}
	if sleeps < 100 || wakes.Load() < 100 {
		t.Fatalf("only %d sleeps and %d wake-ups: the test did not exercise the protocol", sleeps, wakes.Load())
	}
	t.Logf("%d datagrams, %d sleeps, %d wake-ups, %d Pending calls", got, sleeps, wakes.Load(), pendingCalls.Load())
	// Every sender closed: their rings go away once drained.
	in.Refresh()
	if len(in.rings) != 0 || len(dirFiles(t, dir)) != 1 {
		t.Fatalf("rings left: %d, files %v", len(in.rings), dirFiles(t, dir))
	}
}

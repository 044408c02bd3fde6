package seqlock

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestReadConsistent: a reader racing a writer only ever sees blocks whose words agree.
func TestReadConsistent(t *testing.T) {
	block := make([]uint64, 8)
	var wg sync.WaitGroup
	var stop atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		for v := uint64(1); !stop.Load(); v++ {
			Begin(&block[0])
			for i := 1; i < len(block); i++ {
				atomic.StoreUint64(&block[i], v)
			}
			End(&block[0])
		}
	}()
	dst := make([]uint64, 8)
	good := 0
	for range 20000 {
		r := Reader{Tries: 1000, Budget: 1000}
		if !r.Read(block, dst) {
			continue
		}
		good++
		if dst[0]&1 != 0 {
			t.Fatalf("copy at an odd sequence %d", dst[0])
		}
		for i := 2; i < len(dst); i++ {
			if dst[i] != dst[1] {
				t.Fatalf("torn copy: %v", dst)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if good == 0 {
		t.Error("no consistent copy")
	}
}

// TestStuck: a block left odd by a dead writer costs a bounded number of tries, and one process
// takes the lock over.
func TestStuck(t *testing.T) {
	block := make([]uint64, 4)
	held, ok := TryLock(&block[0], 0, 100)
	if !ok || Holder(held) != 100 || Seq(held) != 1 {
		t.Fatalf("TryLock: %#x %v", held, ok)
	}
	if _, ok := TryLock(&block[0], held, 200); ok {
		t.Fatal("TryLock of a held lock")
	}
	if _, ok := Lock(&block[0], 200, 10); ok {
		t.Fatal("Lock of a held lock")
	}
	r := Reader{Tries: 50, Budget: 1 << 20}
	dst := make([]uint64, 4)
	if r.Read(block, dst) || dst[0] != held {
		t.Fatalf("Read of a stuck block: %#x", dst[0])
	}
	if r.Budget != 1<<20-50 {
		t.Errorf("tries spent: %d", 1<<20-r.Budget)
	}
	r = Reader{Tries: 50, Budget: 0}
	r.Read(block, dst)
	if r.Budget != -2 {
		t.Errorf("an exhausted budget still gives two tries: budget %d", r.Budget)
	}
	stolen, ok := Steal(&block[0], held, 300)
	if !ok || Holder(stolen) != 300 || Seq(stolen)&1 == 0 {
		t.Fatalf("Steal: %#x %v", stolen, ok)
	}
	if _, ok := Steal(&block[0], held, 400); ok {
		t.Fatal("a second Steal of the same value")
	}
	Unlock(&block[0], stolen)
	r = Reader{Tries: 50, Budget: 50}
	if !r.Read(block, dst) || Holder(dst[0]) != 0 || Seq(dst[0])&1 != 0 {
		t.Fatalf("after Unlock: %#x", dst[0])
	}
}

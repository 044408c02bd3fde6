package discovery

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReusedPid: an entry whose pid runs but with another start time (the
// owner died and the pid was reused) is skipped and swept.
func TestReusedPid(t *testing.T) {
	d, _ := openTest(t)
	e, err := normalize(v4("ghost", "127.0.0.1:4400"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.claim(e, os.Getpid(), d.start+12345); !ok {
		t.Fatal("claim")
	}
	mustPublish(t, d, v4("wild", "0.0.0.0:4400"))
	if got := lookupOne(t, d, "127.0.0.1:4400", "127.0.0.1:1"); got != "wild" {
		t.Errorf("reused pid's entry not skipped: %q", got)
	}
	if n := d.Sweep(); n != 0 {
		t.Errorf("Lookup left %d to sweep, want 0", n)
	}
	if _, ok := d.claim(e, os.Getpid(), d.start+1); !ok {
		t.Fatal("claim")
	}
	if n := d.Sweep(); n != 1 {
		t.Errorf("Sweep removed %d, want 1", n)
	}
	if got := lookupOne(t, d, "127.0.0.1:4400", "127.0.0.1:1"); got != "wild" {
		t.Errorf("live entry lost: %q", got)
	}
}

// TestStuckEntry: an entry left odd by a writer that died is skipped in
// bounded time and freed by Sweep; one held by a live process is skipped but
// kept.
func TestStuckEntry(t *testing.T) {
	d, _ := openTest(t)
	dead := deadPid(t)
	e, _ := normalize(v4("stuck", "127.0.0.1:4500"))
	h, ok := d.claim(e, dead, 777)
	if !ok {
		t.Fatal("claim")
	}
	s := d.slot(h.slot)
	atomic.StoreUint64(&s[eLock], uint64(dead)<<32|41)
	if got := lookupOne(t, d, "127.0.0.1:4500", "127.0.0.1:1"); got != "" {
		t.Errorf("stuck entry returned: %q", got)
	}
	// A live holder (this process) that is not the owner: kept.
	h2, ok := d.claim(e, dead, 778)
	if !ok {
		t.Fatal("claim")
	}
	s2 := d.slot(h2.slot)
	atomic.StoreUint64(&s2[eLock], uint64(os.Getpid())<<32|7)
	// Owner pid is this process, start time wrong: the owner died, its pid
	// was reused, and the holder is that owner pid: freed.
	h3, ok := d.claim(e, os.Getpid(), d.start+99)
	if !ok {
		t.Fatal("claim")
	}
	s3 := d.slot(h3.slot)
	atomic.StoreUint64(&s3[eLock], uint64(os.Getpid())<<32|9)
	// Odd with no holder at all (corrupt): freed.
	h4, ok := d.claim(e, dead, 779)
	if !ok {
		t.Fatal("claim")
	}
	s4 := d.slot(h4.slot)
	atomic.StoreUint64(&s4[eLock], 3)

	if n := d.Sweep(); n != 3 {
		t.Errorf("Sweep freed %d, want 3", n)
	}
	for _, sl := range [][]uint64{s, s3, s4} {
		if l := atomic.LoadUint64(&sl[eLock]); lockSeq(l)&1 != 0 || uint32(atomic.LoadUint64(&sl[eOwner])) != 0 {
			t.Errorf("slot not freed: lock %#x owner %#x", l, sl[eOwner])
		}
	}
	if l := atomic.LoadUint64(&s2[eLock]); lockSeq(l)&1 == 0 {
		t.Error("entry held by a live writer was taken over")
	}
	// The freed slots are usable again.
	mustPublish(t, d, v4("fresh", "127.0.0.1:4500"))
	if got := lookupOne(t, d, "127.0.0.1:4500", "127.0.0.1:1"); got != "fresh" {
		t.Errorf("after recovery: %q", got)
	}
}

// TestTableFull: Publish fails with ErrDirFull when every entry is live,
// succeeds again after a withdrawal, and sweeps dead entries to make room.
func TestTableFull(t *testing.T) {
	d, _ := openTest(t)
	hs := make([]Handle, 0, Entries)
	for i := 0; i < Entries; i++ {
		hs = append(hs, mustPublish(t, d, v4(fmt.Sprintf("s%d", i), fmt.Sprintf("127.0.0.1:%d", 10000+i))))
	}
	if _, err := d.Publish(v4("extra", "127.0.0.1:9999")); !errors.Is(err, ErrDirFull) {
		t.Fatalf("Publish on a full table: %v, want ErrDirFull", err)
	}
	hs[100].Withdraw()
	h := mustPublish(t, d, v4("extra", "127.0.0.1:9999"))
	if got := lookupOne(t, d, "127.0.0.1:9999", "127.0.0.1:1"); got != "extra" {
		t.Errorf("entry in the freed slot: %q", got)
	}
	// Make one slot a dead process's: Publish sweeps it.
	h.Withdraw()
	e, _ := normalize(v4("dead", "127.0.0.1:9998"))
	if _, ok := d.claim(e, deadPid(t), 5); !ok {
		t.Fatal("claim")
	}
	mustPublish(t, d, v4("afterdead", "127.0.0.1:9997"))
	if got := lookupOne(t, d, "127.0.0.1:9998", "127.0.0.1:1"); got != "" {
		t.Errorf("dead entry still there: %q", got)
	}
	// The last handle still works: entries are found across the whole table.
	if got := lookupOne(t, d, fmt.Sprintf("127.0.0.1:%d", 10000+Entries-1), "127.0.0.1:1"); got != fmt.Sprintf("s%d", Entries-1) {
		t.Errorf("last slot: %q", got)
	}
}

// TestHandleAfterWithdraw: a stale handle (withdrawn, or its slot reused)
// changes nothing.
func TestHandleAfterWithdraw(t *testing.T) {
	d, _ := openTest(t)
	h := mustPublish(t, d, v4("a", "127.0.0.1:4600"))
	h.Withdraw()
	h2 := mustPublish(t, d, v4("b", "127.0.0.1:4600"))
	if h2.slot != h.slot {
		t.Logf("slot not reused (%d, %d): test weaker", h.slot, h2.slot)
	}
	h.Update(v4("evil", "127.0.0.1:4600"))
	h.Withdraw()
	if got := lookupOne(t, d, "127.0.0.1:4600", "127.0.0.1:1"); got != "b" {
		t.Errorf("stale handle changed the new entry: %q", got)
	}
	var zero Handle
	zero.Update(v4("x", "127.0.0.1:1"))
	zero.Withdraw()
	// Update with an invalid entry keeps the published one.
	h2.Update(Entry{Family: unix.AF_INET, Inbox: "../x"})
	if got := lookupOne(t, d, "127.0.0.1:4600", "127.0.0.1:1"); got != "b" {
		t.Errorf("invalid update: %q", got)
	}
	gen := d.Gen()
	c := v4("b-connected", "127.0.0.1:4600")
	c.Peer = ap("127.0.0.5:5")
	h2.Update(c)
	if d.Gen() == gen {
		t.Error("Update did not bump the generation")
	}
	if got := lookupOne(t, d, "127.0.0.1:4600", "127.0.0.5:5"); got != "b-connected" {
		t.Errorf("after Update: %q", got)
	}
	if got := lookupOne(t, d, "127.0.0.1:4600", "127.0.0.5:6"); got != "" {
		t.Errorf("connected elsewhere after Update: %q", got)
	}
}

// TestStuckTableBounded: a table whose every entry is stuck odd under a
// live holder costs a bounded time per Lookup and Sweep.
func TestStuckTableBounded(t *testing.T) {
	d, _ := openTest(t)
	e, _ := normalize(v4("stuck", "127.0.0.1:4550"))
	for i := 0; i < Entries; i++ {
		h, ok := d.claim(e, os.Getpid(), d.start)
		if !ok {
			t.Fatal("claim")
		}
		atomic.StoreUint64(&d.slot(h.slot)[eLock], uint64(os.Getpid())<<32|1)
	}
	start := time.Now()
	if got := d.Lookup(ap("127.0.0.1:4550"), ap("127.0.0.1:1"), nil); len(got) != 0 {
		t.Errorf("stuck entries returned: %d", len(got))
	}
	if got := d.Lookup(ap("239.1.1.1:4550"), ap("127.0.0.1:1"), nil); len(got) != 0 {
		t.Errorf("stuck entries returned: %d", len(got))
	}
	if n := d.Sweep(); n != 0 {
		t.Errorf("Sweep took %d entries from a live holder", n)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("two lookups and a sweep over a stuck table took %v", el)
	}
}

package discovery

import (
	"fmt"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestChurnKeepsTableLow: sockets that come and go (one published at a time, 3 held for good)
// reuse the lowest free slots, so the high-water mark every lookup scans up to stays at the
// number of entries published at once, and lookups still find every live entry.
func TestChurnKeepsTableLow(t *testing.T) {
	d, _ := openTest(t)
	for i := 0; i < 3; i++ {
		mustPublish(t, d, v4(fmt.Sprintf("held%d", i), fmt.Sprintf("127.0.0.1:%d", 7000+i)))
	}
	for i := 0; i < 2*Entries; i++ {
		h := mustPublish(t, d, v4("churn", "127.0.0.1:9000"))
		if got := inboxes(d.Lookup(ap("127.0.0.1:9000"), ap("127.0.0.1:1"), nil)); len(got) != 1 || got[0] != "churn" {
			t.Fatalf("round %d: lookup found %v, want [churn]", i, got)
		}
		h.Withdraw()
	}
	if hi := d.high(); hi > 4 {
		t.Fatalf("high-water mark %d after %d publish/withdraw rounds, want at most 4", hi, 2*Entries)
	}
	for i := 0; i < 3; i++ {
		if got := inboxes(d.Lookup(ap(fmt.Sprintf("127.0.0.1:%d", 7000+i)), ap("127.0.0.1:1"), nil)); len(got) != 1 {
			t.Fatalf("held entry %d: lookup found %v", i, got)
		}
	}
	// A slot freed below others is the next one taken.
	a := mustPublish(t, d, v4("a", "127.0.0.1:9001"))
	b := mustPublish(t, d, v4("b", "127.0.0.1:9002"))
	a.Withdraw()
	c := mustPublish(t, d, v4("c", "127.0.0.1:9003"))
	if c.slot != a.slot {
		t.Fatalf("publish after a withdrawal took slot %d, want the freed slot %d", c.slot, a.slot)
	}
	b.Withdraw()
	c.Withdraw()
}

// TestHighComesDown: the high-water mark comes down when the top slots are freed, also in a
// directory left with a mark at the whole table (a file that outlived a network namespace whose
// number came back), and lookups still find the entries below it.
func TestHighComesDown(t *testing.T) {
	d, _ := openTest(t)
	var hs []Handle
	for i := 0; i < 100; i++ {
		hs = append(hs, mustPublish(t, d, v4(fmt.Sprint("e", i), fmt.Sprintf("127.0.0.1:%d", 8000+i))))
	}
	for _, h := range hs[1:] {
		h.Withdraw()
	}
	if hi := d.high(); hi != 1 {
		t.Fatalf("high-water mark %d with only slot 0 taken, want 1", hi)
	}
	atomic.StoreUint64(&d.mem[hHigh], Entries) // as a long-lived directory may have it
	h := mustPublish(t, d, v4("x", "127.0.0.1:9000"))
	h.Withdraw()
	if hi := d.high(); hi != 1 {
		t.Fatalf("high-water mark %d after a withdrawal in a directory marked full, want 1", hi)
	}
	if got := inboxes(d.Lookup(ap("127.0.0.1:8000"), ap("127.0.0.1:1"), nil)); len(got) != 1 || got[0] != "e0" {
		t.Fatalf("lookup of the entry below the mark: %v", got)
	}
	hs[0].Withdraw()
	if hi := d.high(); hi != 0 {
		t.Fatalf("high-water mark %d with an empty table, want 0", hi)
	}
}

// TestOpenLowersHigh: a process that opens a directory whose mark was left at the whole table
// with the slots free brings it down at once (its lookups would read every slot otherwise, and
// a socket that is never published never withdraws anything).
func TestOpenLowersHigh(t *testing.T) {
	d, dir := openTest(t)
	mustPublish(t, d, v4("a", "127.0.0.1:8000"))
	atomic.StoreUint64(&d.mem[hHigh], Entries)
	d2, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if hi := d2.high(); hi != 1 {
		t.Fatalf("high-water mark %d after Open with slot 0 taken, want 1", hi)
	}
}

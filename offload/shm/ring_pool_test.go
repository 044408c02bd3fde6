package shm

import (
	"os"
	"strings"
	"testing"
)

// ringPoolFiles lists the pool names in dir.
func ringPoolFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "goxio.ringpool.") {
			out = append(out, e.Name())
		}
	}
	return out
}

// A ring the receiver detached (its inbox closed) is reused for the sender's next inbox, carries
// only what is sent in its new life, and goes at DrainRingPool; a ring the receiver still holds
// is not kept.
func TestRingPoolReuse(t *testing.T) {
	DrainRingPool()
	dir := testDir(t)
	a, err := CreateInbox(dir, "a", 2)
	if err != nil {
		t.Fatal(err)
	}
	o, err := DialInbox(dir, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	ino := o.pool.ino
	for _, m := range []string{"one", "two"} {
		if _, err := o.Send(nil, [][]byte{[]byte(m)}, len(m)); err != nil {
			t.Fatal(err)
		}
	}
	if _, data, err := drainOne(a); string(data) != "one" {
		t.Fatalf("a got %q %v", data, err)
	}
	a.Close() // detaches the ring with "two" unread
	if !o.Closed() {
		t.Fatal("outlet does not see the closed inbox")
	}
	o.Close()
	if f := ringPoolFiles(t, dir); len(f) != 1 {
		t.Fatalf("pool files after the close: %v", f)
	}
	b := mustInbox(t, dir, "b", 2)
	o2 := mustDial(t, dir, "b", 0)
	if o2.pool.ino != ino {
		t.Fatal("the detached ring was not reused")
	}
	if _, err := o2.Send(nil, [][]byte{[]byte("three")}, 5); err != nil {
		t.Fatal(err)
	}
	if _, data, err := drainOne(b); string(data) != "three" {
		t.Fatalf("b got %q %v, want only what was sent to it", data, err)
	}
	if _, _, err := drainOne(b); err != ErrEmpty {
		t.Fatalf("b: a second datagram (%v)", err)
	}
	// b still holds o2's ring: closing o2 keeps nothing for reuse.
	o2.Close()
	if f := ringPoolFiles(t, dir); len(f) != 0 {
		t.Fatalf("pool files after closing a ring its receiver holds: %v", f)
	}
	DrainRingPool()
}

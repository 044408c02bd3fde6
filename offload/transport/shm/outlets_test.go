package shm

import (
	"fmt"
	"testing"

	ring "github.com/goxio/goxio/offload/shm"
)

// A sender that reaches a new short-lived inbox per request keeps a bounded number of outlets:
// those towards closed inboxes are dropped (their mappings released), live ones are kept.
func TestOutletsOfClosedInboxesDropped(t *testing.T) {
	e := testEnv(t, 0)
	live, err := ring.CreateInbox(e.p.Dir, "goxio.test.live", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if e.outlet(live.Name()) == nil {
		t.Fatal("no outlet to a live inbox")
	}
	const n = 500
	for i := range n {
		in, err := ring.CreateInbox(e.p.Dir, fmt.Sprintf("goxio.test.%d", i), 4)
		if err != nil {
			t.Fatal(err)
		}
		if e.outlet(in.Name()) == nil {
			t.Fatalf("no outlet to inbox %d", i)
		}
		if err := in.Close(); err != nil {
			t.Fatal(err)
		}
	}
	e.mu.Lock()
	kept := len(e.outlets)
	_, liveKept := e.outlets[live.Name()]
	e.mu.Unlock()
	if kept > 2*minOutletSweep || !liveKept {
		t.Errorf("after %d closed inboxes: %d outlets kept (the live one: %v), want at most %d with the live one",
			n, kept, liveKept, 2*minOutletSweep)
	}
}

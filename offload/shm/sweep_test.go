package shm

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/goxio/goxio/internal/shmseg"
)

// TestSweepDir: segments of dead processes go, those of live ones and foreign files stay.
func TestSweepDir(t *testing.T) {
	dir := testDir(t)
	dead := uint64(deadPID(t))
	live := mustInbox(t, dir, "live", 2)
	lo := mustDial(t, dir, "live", 0)
	gone, err := CreateInbox(dir, "gone", 2)
	if err != nil {
		t.Fatal(err)
	}
	o, err := DialInbox(dir, "gone", 0)
	if err != nil {
		t.Fatal(err)
	}
	// A live inbox holding the ring of a dead sender: the receiver will drain it, keep it.
	deadInLive, err := DialInbox(dir, "live", 0)
	if err != nil {
		t.Fatal(err)
	}
	live.Refresh()
	atomic.StoreUint64(word64(deadInLive.ringMem, rgPID), dead)
	// "gone": owner and sender die without closing.
	atomic.StoreUint64(word64(gone.mem, ibPID), dead)
	atomic.StoreUint64(word64(o.ringMem, rgPID), dead)
	if err := os.WriteFile(shmseg.Join(dir, "foreign"), []byte("not a segment at all, 48 bytes or more of text"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, dir)
	// The inbox and ring of "gone", and the pool names of both rings whose sender is dead
	// (ring_pool.go: only the sender reuses a ring; the receiver drains it under its ring name).
	if n := SweepDir(dir); n != 4 {
		t.Fatalf("removed %d, want 4 (files before %v, after %v)", n, before, dirFiles(t, dir))
	}
	after := dirFiles(t, dir)
	for _, f := range []string{"live", "foreign", filepath.Base(lo.ringPath), filepath.Base(deadInLive.ringPath)} {
		if !slices.Contains(after, f) {
			t.Fatalf("%s removed: %v", f, after)
		}
	}
	for _, f := range []string{"gone", filepath.Base(o.ringPath)} {
		if slices.Contains(after, f) {
			t.Fatalf("%s kept: %v", f, after)
		}
	}
	live.Refresh()
	if len(live.rings) != 2 {
		t.Fatalf("live inbox lost a ring: %d", len(live.rings))
	}
	o.Close()
	gone.Close()
	deadInLive.Close()
}

package xdp

import "testing"

// TestHoldTable: a handle names its frame once; a freed, reused-slot, out-of-range or made-up
// handle names nothing; takeAll hands back every frame still held.
func TestHoldTable(t *testing.T) {
	var tab holdTable
	a, b := &rxBuf{idx: 1}, &rxBuf{idx: 2}
	ha, hb := tab.add(a), tab.add(b)
	if ha == hb {
		t.Fatalf("two frames, one handle %#x", ha)
	}
	if got := tab.take(ha); got != a {
		t.Fatalf("take(a) = %v", got)
	}
	if got := tab.take(ha); got != nil {
		t.Fatalf("a second take of a freed handle gave %v", got)
	}
	c := &rxBuf{idx: 3}
	hc := tab.add(c) // reuses a's slot, with another generation
	if hc&0xffffffff != ha&0xffffffff || hc == ha {
		t.Fatalf("slot reuse: %#x after %#x", hc, ha)
	}
	if got := tab.take(ha); got != nil {
		t.Fatalf("the old handle of a reused slot gave %v", got)
	}
	for _, h := range []uint64{0, 1 << 32, hb + 7, hb ^ 1<<40} {
		if got := tab.take(h); got != nil {
			t.Fatalf("made-up handle %#x gave %v", h, got)
		}
	}
	left := tab.takeAll(nil)
	if len(left) != 2 || !(left[0] == c && left[1] == b || left[0] == b && left[1] == c) {
		t.Fatalf("takeAll = %v", left)
	}
	if got := tab.take(hb); got != nil {
		t.Fatalf("a handle after takeAll gave %v", got)
	}
}

// TestHeldFramesFillQueue: frames the program holds take room in the socket's queue as queued
// ones do, and freeing gives it back.
func TestHeldFramesFillQueue(t *testing.T) {
	q := newRxQueue(4)
	for range 2 {
		if !q.push(&rxBuf{}) {
			t.Fatal("push refused with room")
		}
	}
	q.mu.Lock()
	q.held = 2 // two more frames received and held
	q.mu.Unlock()
	if q.push(&rxBuf{}) {
		t.Fatal("push accepted into a queue whose room the held frames take")
	}
	q.mu.Lock()
	q.held = 1
	q.mu.Unlock()
	if !q.push(&rxBuf{}) {
		t.Fatal("push refused after a free")
	}
}

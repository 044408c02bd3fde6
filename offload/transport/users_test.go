package transport

import (
	"sync"
	"testing"
)

// TestUsersRelease: release runs once, when the socket is closed and the last call inside has
// exited; a call that enters after Close is refused; many calls and a Close racing end the same.
func TestUsersRelease(t *testing.T) {
	var u Users
	released := 0
	release := func() { released++ }
	for range 2 {
		if !u.Enter(release) {
			t.Fatal("Enter refused on an open socket")
		}
	}
	u.Close(release)
	if released != 0 || !u.Closed() {
		t.Fatalf("after Close with 2 calls inside: released %d, closed %v", released, u.Closed())
	}
	if u.Enter(release) {
		t.Fatal("Enter after Close")
	}
	u.Exit(release)
	if released != 0 {
		t.Fatal("released with a call still inside")
	}
	u.Exit(release)
	if released != 1 {
		t.Fatalf("released %d times after the last exit, want once", released)
	}
	u.Close(release)
	if released != 1 {
		t.Fatal("a second Close released again")
	}

	for range 50 {
		var v Users
		var mu sync.Mutex
		n := 0
		rel := func() { mu.Lock(); n++; mu.Unlock() }
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 100 {
					if v.Enter(rel) {
						v.Exit(rel)
					}
				}
			}()
		}
		v.Close(rel)
		wg.Wait()
		if n != 1 {
			t.Fatalf("released %d times under racing calls, want once", n)
		}
	}
}

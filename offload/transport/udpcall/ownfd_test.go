package udpcall

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// TestOwnRef: the socket's reference is made at the first Take and shared by the next ones; a
// fork's Drop leaves it while a receive uses it and closes it once none does; the release's Drop
// closes it whatever.
func TestOwnRef(t *testing.T) {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(s)
	adopted := 0
	adopt := func(fd int) int { adopted++; return fd }
	var closed []int
	closeFD := func(fd int) { closed = append(closed, fd); unix.Close(fd) }

	var o OwnRef
	a, b := transport.Call{FD: s}, transport.Call{FD: s}
	if !o.Take(&a, adopt) || !o.Take(&b, adopt) {
		t.Fatal("Take failed")
	}
	if a.FD == s || a.FD != b.FD || adopted != 1 {
		t.Fatalf("calls sleep on %d and %d (program's %d), %d references made; want one shared copy", a.FD, b.FD, s, adopted)
	}
	o.Put()
	o.Drop(false, closeFD) // a fork while one receive sleeps on it
	if len(closed) != 0 {
		t.Fatalf("a fork's drop closed %v while a receive used it", closed)
	}
	o.Put()
	o.Drop(false, closeFD)
	if len(closed) != 1 || closed[0] != a.FD {
		t.Fatalf("a fork's drop with no user closed %v, want [%d]", closed, a.FD)
	}
	c := transport.Call{FD: s}
	if !o.Take(&c, adopt) || adopted != 2 {
		t.Fatalf("no new reference after the drop (%d made)", adopted)
	}
	o.Drop(true, closeFD) // the release, though the call has not put it
	if len(closed) != 2 || closed[1] != c.FD {
		t.Fatalf("the release's drop closed %v, want the second reference %d too", closed, c.FD)
	}
}

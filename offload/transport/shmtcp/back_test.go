package shmtcp

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBackAtFork: a switched connection whose one end forks goes back to the kernel in both
// directions without losing or reordering a byte: bytes written into the rings before, bytes the
// "child" writes straight to the kernel socket after (as a forked child does), and bytes both
// ends send through the transport after.
func TestBackAtFork(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	c.sendAll([]byte("ring-c1 "))
	s.sendAll([]byte("ring-s1 "))
	if b := s.recvAll(4); string(b) != "ring" {
		t.Fatalf("s got %q", b)
	}

	c.tr.BeforeFork(c.fd)
	if _, tx := c.tr.Mode(); tx {
		t.Fatalf("c still writes into the ring after BeforeFork")
	}
	// The forked child writes to the kernel socket directly.
	if n, err := unix.Write(c.fd, []byte("child ")); n != 6 || err != nil {
		t.Fatalf("child write: %d %v", n, err)
	}
	c.sendAll([]byte("parent-c2"))
	// s had ring bytes queued for c before it saw the request; its next send goes back.
	s.sendAll([]byte("after-request"))

	if b := s.recvAll(len("-c1 child parent-c2")); string(b) != "-c1 child parent-c2" {
		t.Fatalf("s got %q, want %q", b, "-c1 child parent-c2")
	}
	want := "ring-s1 after-request"
	if b := c.recvAll(len(want)); string(b) != want {
		t.Fatalf("c got %q, want %q", b, want)
	}
	// Both directions are the kernel's now: the segment is gone on both ends after one more
	// exchange.
	s.sendAll([]byte("k"))
	if b := c.recvAll(1); string(b) != "k" {
		t.Fatalf("c got %q", b)
	}
	c.sendAll([]byte("z"))
	if b := s.recvAll(1); string(b) != "z" {
		t.Fatalf("s got %q", b)
	}
	if c.tr.conn.Load() != nil || s.tr.conn.Load() != nil {
		t.Fatalf("segment still open after both directions went back: c %v s %v",
			c.tr.conn.Load() != nil, s.tr.conn.Load() != nil)
	}
	if got := env.Counts().Back; got != 2 {
		t.Fatalf("Back = %d, want 2", got)
	}
	// A byte written by a child after everything is still in order.
	if _, err := unix.Write(c.fd, []byte("end")); err != nil {
		t.Fatal(err)
	}
	if b := s.recvAll(3); !bytes.Equal(b, []byte("end")) {
		t.Fatalf("s got %q", b)
	}
}

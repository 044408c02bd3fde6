package shmtcp

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSleeperWokenDespiteMarks: a spin mark that outlives a call (an epoll set's awake mark,
// held while the thread that waits on the set runs the program) does not keep the peer's wake
// byte from another thread asleep in a blocking receive on the same connection: the writer
// sends one, and the sleeper returns with the bytes.
func TestSleeperWokenDespiteMarks(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	// A wake byte of the exchange may still be on its way: the receiver takes it first (a
	// wake-up in flight is all a writer sends).
	deadline := time.Now().Add(5 * time.Second)
	for s.tr.conn.Load().WakePending() {
		if time.Now().After(deadline) {
			t.Fatal("the exchange's wake byte was never taken")
		}
		if _, errno := s.recv(1, unix.MSG_DONTWAIT); errno != unix.EAGAIN {
			t.Fatalf("non-blocking receive on an empty connection: %v", errno)
		}
		time.Sleep(time.Millisecond)
	}
	m := s.tr.Mark()
	if m == nil {
		t.Fatal("no mark taken on a switched connection")
	}
	defer m.SpinEnd()
	got := make(chan []byte, 1)
	go func() { got <- s.recvAll(5) }()
	deadline = time.Now().Add(5 * time.Second)
	for s.tr.rxSleepers.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the receive never went to sleep")
		}
		time.Sleep(time.Millisecond)
	}
	wakes := c.tr.Stats().WakesTx
	c.sendAll([]byte("hello"))
	select {
	case b := <-got:
		if string(b) != "hello" {
			t.Fatalf("received %q", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the sleeper was not woken")
	}
	if n := c.tr.Stats().WakesTx - wakes; n != 1 {
		t.Fatalf("the writer sent %d wake bytes to a sleeper while a mark was held, want 1", n)
	}
}

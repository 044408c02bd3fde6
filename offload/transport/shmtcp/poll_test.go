package shmtcp

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// kernelRevents is the kernel's poll answer for fd right now.
func kernelRevents(t *testing.T, fd int, events int16) int16 {
	t.Helper()
	rev, errno := ppoll1(fd, events, &unix.Timespec{})
	if errno != 0 {
		t.Fatalf("ppoll: %v", errno)
	}
	return rev
}

// pollUntil asks Poll, sleeping on the kernel fd with KernelEvents between looks, until it
// reports one of want (or fails the test after 5 s).
func pollUntil(t *testing.T, e *end, events, want int16) int16 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rev, ok := e.tr.Poll(e.fd, events, kernelRevents(t, e.fd, e.tr.KernelEvents(events)))
		if !ok {
			t.Fatalf("Poll: no segment")
		}
		if rev&want != 0 {
			return rev
		}
		if time.Now().After(deadline) {
			t.Fatalf("Poll never reported %#x (last %#x)", want, rev)
		}
		ts := unix.NsecToTimespec(int64(10 * time.Millisecond))
		_, _ = ppoll1(e.fd, e.tr.KernelEvents(events), &ts)
	}
}

// TestWokenReceiveTakesWakeByte: a receive that slept and was woken by the peer's wake byte
// takes the data from the ring and the byte too, so that nothing stays queued on the kernel
// socket (a process killed with an unread byte there resets the connection instead of closing
// it: semantic peer_exit's idle peer).
func TestWokenReceiveTakesWakeByte(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	switched(t, c, s)
	got := make(chan []byte, 1)
	go func() {
		b, _ := s.recv(16, 0) // sleeps in the transport until the wake byte
		got <- b
	}()
	deadline := time.Now().Add(5 * time.Second)
	for s.tr.sleepers.Load() == 0 { // in ppoll on the kernel socket
		if time.Now().After(deadline) {
			t.Fatal("the receive never went to sleep")
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	c.sendAll([]byte("state"))
	select {
	case b := <-got:
		if string(b) != "state" {
			t.Fatalf("recv %q, want %q", b, "state")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("blocked recv never woke")
	}
	if k := kernelRevents(t, s.fd, unix.POLLIN); k&unix.POLLIN != 0 {
		t.Fatalf("a wake byte stayed queued on the kernel socket after the woken receive (revents %#x)", k)
	}
}

// TestPollStaleWakeByte: a wake byte can still be left queued on the kernel socket (the writer
// sent it to a registered sleeper that then found the data at its last look, or a receive took
// the data without looking at the kernel), so the kernel reports POLLIN for a connection with
// nothing to read (iperf3 paired: the server's select said its control socket was readable, its
// blocking read then waited for the client, which waited for the server). Poll reports no POLLIN
// there and drains the byte; it reports POLLIN for the next data, and POLLOUT after our switch
// only when the ring has space.
func TestPollStaleWakeByte(t *testing.T) {
	env := testEnv(t, func(p *Params) { p.RingBytes, p.MaxRingBytes = 16<<10, 16<<10 })
	c, s := pair(t, env, env)
	switched(t, c, s)

	s.tr.Sleep(true) // a sleeper registered: the writer sends its wake byte
	c.sendAll([]byte("state"))
	s.tr.Sleep(false)
	deadline := time.Now().Add(5 * time.Second)
	for kernelRevents(t, s.fd, unix.POLLIN)&unix.POLLIN == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no wake byte arrived for the registered sleeper")
		}
		time.Sleep(time.Millisecond)
	}
	s.tr.lastKernel.Store(nanotime()) // the receive below takes the data without a kernel look
	s.nb.Store(true)
	if b, errno := s.recv(16, 0); string(b) != "state" || errno != 0 {
		t.Fatalf("recv %q, %v, want %q", b, errno, "state")
	}
	s.nb.Store(false)
	if s.tr.Readable(s.fd) {
		t.Fatalf("Readable with an empty ring")
	}
	kern := kernelRevents(t, s.fd, unix.POLLIN)
	if kern&unix.POLLIN == 0 {
		t.Fatalf("the scenario needs a wake byte left on the kernel socket (revents %#x)", kern)
	}
	if rev, ok := s.tr.Poll(s.fd, unix.POLLIN, kern); !ok || rev&unix.POLLIN != 0 {
		t.Fatalf("Poll = %#x, %v: POLLIN for an empty ring", rev, ok)
	}
	if k := kernelRevents(t, s.fd, unix.POLLIN); k&unix.POLLIN != 0 {
		t.Fatalf("kernel still readable after Poll drained the wake bytes (revents %#x)", k)
	}

	c.sendAll([]byte("next"))
	pollUntil(t, s, unix.POLLIN, unix.POLLIN)
	s.nb.Store(true)
	if b, errno := s.recv(16, 0); string(b) != "next" || errno != 0 {
		t.Fatalf("recv after POLLIN = %q, %v", b, errno)
	}

	// POLLOUT: the kernel's is always set after our switch; Poll's follows the ring.
	c.nb.Store(true)
	for range 64 {
		if _, errno := c.send(make([]byte, 4096), 0); errno == unix.EAGAIN {
			break
		}
	}
	kern = kernelRevents(t, c.fd, unix.POLLOUT)
	if kern&unix.POLLOUT == 0 {
		t.Fatalf("kernel POLLOUT not set on a switched writer (revents %#x)", kern)
	}
	if rev, _ := c.tr.Poll(c.fd, unix.POLLOUT, kern); rev&unix.POLLOUT != 0 {
		t.Fatalf("Poll = %#x: POLLOUT with a full ring", rev)
	}
	if ev := c.tr.KernelEvents(unix.POLLOUT); ev&unix.POLLOUT != 0 || ev&unix.POLLIN == 0 {
		t.Fatalf("KernelEvents(POLLOUT) = %#x, want POLLIN without POLLOUT", ev)
	}
	for {
		b, errno := s.recv(16<<10, 0)
		if errno == unix.EAGAIN {
			break
		}
		if errno != 0 || len(b) == 0 {
			t.Fatalf("draining: %d bytes, %v", len(b), errno)
		}
	}
	pollUntil(t, c, unix.POLLOUT, unix.POLLOUT)
}

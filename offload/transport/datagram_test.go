package transport

import (
	"testing"

	"golang.org/x/sys/unix"
)

type fakeQueue struct {
	shut   bool
	queued []int
	gave   Reason
}

func (q *fakeQueue) ShutWrite() { q.shut = true }
func (q *fakeQueue) NextSize() (int, bool) {
	if len(q.queued) == 0 {
		return 0, false
	}
	return q.queued[0], true
}
func (q *fakeQueue) RingReady() bool { return len(q.queued) > 0 }
func (q *fakeQueue) GaveUp() Reason  { return q.gave }
func (q *fakeQueue) HandOver() [][2][]byte {
	out := make([][2][]byte, len(q.queued))
	q.queued, q.gave = nil, ReasonForkedChild
	return out
}

func TestDatagramHooks(t *testing.T) {
	q := &fakeQueue{queued: []int{42}}
	DatagramShutdown(q, unix.SHUT_RD)
	if q.shut {
		t.Fatal("SHUT_RD stopped the sending")
	}
	DatagramShutdown(q, unix.SHUT_RDWR)
	if !q.shut {
		t.Fatal("SHUT_RDWR did not stop the sending")
	}
	if n, ok := DatagramIoctl(q, unix.SIOCINQ); n != 42 || !ok {
		t.Fatalf("FIONREAD: %d %v, want the next datagram's 42", n, ok)
	}
	if _, ok := DatagramIoctl(q, unix.SIOCOUTQ); ok {
		t.Fatal("SIOCOUTQ is the kernel's")
	}
	if rev, ok := DatagramPoll(q, unix.POLLIN, unix.POLLOUT); rev != unix.POLLIN|unix.POLLOUT || !ok {
		t.Fatalf("poll with a queued datagram: %#x", rev)
	}
	if rev, _ := DatagramPoll(q, unix.POLLOUT, unix.POLLOUT); rev != unix.POLLOUT {
		t.Fatalf("poll without POLLIN asked: %#x", rev)
	}
	if dgs, ok := DatagramFork(q); len(dgs) != 1 || !ok {
		t.Fatalf("fork: %d datagrams, %v", len(dgs), ok)
	}
	if _, ok := DatagramFork(q); ok {
		t.Fatal("a socket back on the kernel handed over again")
	}
	if rev, _ := DatagramPoll(q, unix.POLLIN, 0); rev != 0 {
		t.Fatalf("poll with nothing queued: %#x", rev)
	}
}

package shm

import (
	"net/netip"
	"sync/atomic"
	"testing"
)

// TestSendOrderMarks follows the marks of one socket's ring datagrams as its kernel sends come
// and go: the first ring datagram to each destination after a kernel send is marked, and only
// that one.
func TestSendOrderMarks(t *testing.T) {
	var slot uint64 // the statistics slot's kernel tx packets, where the trampoline counts
	u := &UDP{KernelTx: &slot}
	a := netip.MustParseAddrPort("127.0.0.1:5000")
	b := netip.MustParseAddrPort("127.0.0.1:5001")
	send := func(r *route) bool {
		seen, mark := u.markFor(r)
		if mark {
			u.ordered(r, seen)
		}
		return mark
	}
	ra := &route{dst: a}
	if send(ra) {
		t.Fatal("a socket that never sent through the kernel marked a datagram")
	}
	u.kernelSent()
	if !send(ra) {
		t.Fatal("the first ring datagram after a kernel send of the engine is not marked")
	}
	if send(ra) {
		t.Fatal("the second ring datagram after one kernel send is marked too")
	}
	// The route made again (a new directory generation): the table remembers the mark.
	if send(&route{dst: a}) {
		t.Fatal("a new route to a destination already marked for this count marks again")
	}
	// Another destination has not had its mark yet.
	rb := &route{dst: b}
	if !send(rb) {
		t.Fatal("the first ring datagram to a second destination is not marked")
	}
	if send(ra) || send(rb) {
		t.Fatal("a destination marked for this count marks again")
	}
	// A send of the trampoline (into the slot) moves the count for every destination.
	atomic.AddUint64(&slot, 1)
	if !send(ra) || !send(rb) {
		t.Fatal("a kernel send of the trampoline does not mark the next ring datagram to each destination")
	}
	// A mark whose datagram did not go (markFor without ordered) leaves the next one marked.
	u.kernelSent()
	if _, mark := u.markFor(ra); !mark {
		t.Fatal("not marked after a kernel send")
	}
	if _, mark := u.markFor(ra); !mark {
		t.Fatal("a mark that was not sent counted as sent")
	}
}

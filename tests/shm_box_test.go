package tests

import (
	"strconv"
	"testing"
)

// TestShmBoxRecv: plain receives (recvfrom, recv, read, recvmsg) of a burst on a ring socket take
// the datagrams the engine queued in the socket's box without entering the engine for each
// (shim/preload/box.c): tests/shm/boxrecv.c counts its calls into the engine around its
// receives, and checks that every datagram comes whole, in order, from the sender's address.
func TestShmBoxRecv(t *testing.T) {
	h := newShmHarness(t)
	const rounds, burst = 80, 200
	out := shmProgRun(t, "boxrecv", h.env(), strconv.Itoa(rounds), strconv.Itoa(burst))
	for _, k := range []string{"recvfrom", "recv", "read", "recvmsg"} {
		got, calls := out[k+" got"], out[k+" calls"]
		if got != rounds/4*burst || out[k+" bad"] != 0 {
			t.Errorf("%s: %d datagrams, %d not the next one whole; want %d, 0", k, got, out[k+" bad"], rounds/4*burst)
		}
		if calls < 0 {
			t.Fatal("goxio_thread_engine_calls not found in the library")
		}
		// A box holds 32 records: a receive that enters the engine takes one datagram and
		// queues up to 32, so about one call in 33; a quarter leaves room for a sender that
		// was slow to fill the ring.
		if calls*4 > got {
			t.Errorf("%s: %d engine calls for %d datagrams; want at most a quarter", k, calls, got)
		}
	}
	h.requireClean()
}

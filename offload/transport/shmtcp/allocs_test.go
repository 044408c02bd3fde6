package shmtcp

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// TestTransferAllocs checks that a send and a receive on a switched connection allocate nothing:
// a call's buffer list once moved to the heap through a store in the receive and send loops, and
// an event loop's garbage then made a collection ~50 times a second (wrk against nginx).
func TestTransferAllocs(t *testing.T) {
	env := testEnv(t, nil)
	c, s := pair(t, env, env)
	for range 2 {
		c.sendAll([]byte("x"))
		s.recvAll(1)
		s.sendAll([]byte("y"))
		c.recvAll(1)
	}
	if st := c.tr.Stats(); !st.TxRing || !st.RxRing {
		t.Fatalf("connection not switched: %+v", st)
	}
	send := call(transport.OpSendto, c.fd, addr(c.wbuf), 64, unix.MSG_NOSIGNAL, 0, 0)
	recv := call(transport.OpRecvfrom, s.fd, addr(s.rbuf), 64, unix.MSG_WAITALL, 0, 0)
	writev := call(transport.OpWritev, c.fd, iovecs(c.scr, c.wbuf[:32], c.wbuf[32:64]), 2)
	var bad string
	allocs := testing.AllocsPerRun(200, func() {
		for _, snd := range [2]*transport.Call{&send, &writev} {
			if n, errno := c.tr.Transfer(*snd); n != 64 || errno != 0 {
				bad = "send"
			}
			if n, errno := s.tr.Transfer(recv); n != 64 || errno != 0 {
				bad = "receive"
			}
		}
	})
	if bad != "" {
		t.Fatalf("a %s failed", bad)
	}
	if allocs != 0 {
		t.Fatalf("%.1f allocations per send and receive, want 0", allocs)
	}
}

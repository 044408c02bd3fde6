package offload

import (
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// A UDP socket is seen decided only with its transport chosen: a blocking receive that waits
// for the decision without the socket's lock (udpWaitInbox) and found the decision before the
// rings went on to the kernel, where ring datagrams never arrive (TestShmEarlyReceive lost all
// of them about once in 50 runs). An observer spins on the lock-free reads while bind decides.
func TestDecidedComesWithRings(t *testing.T) {
	e, _, _ := newTCPEngine(t, 0)
	m := newCmem(t)
	sa, sl := m.sockaddr(loopback)
	for i := range 300 {
		fd := kernelSocket(t, e, unix.SOCK_DGRAM)
		s := e.reg.get(fd)
		if s == nil {
			t.Fatalf("socket %d not registered", fd)
		}
		var stop, bad atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() {
				if s.isDecided() && s.rings() == nil {
					bad.Store(true)
					return
				}
			}
		}()
		if r := call(e, transport.OpBind, fd, sa, sl); r != 0 {
			t.Fatalf("bind = %d", r)
		}
		stop.Store(true)
		<-done
		if bad.Load() {
			t.Fatalf("round %d: the socket was seen decided without its rings", i)
		}
		if s.rings() == nil {
			t.Fatalf("round %d: a bound loopback UDP socket has no rings", i)
		}
	}
}

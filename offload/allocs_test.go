package offload

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/transport"
)

// TestTransferAllocs: a data call through the engine (registry, the socket's transport as a
// transport.Endpoint, counting) allocates nothing.
func TestTransferAllocs(t *testing.T) {
	e, _ := newEngine(t, "")
	m := newCmem(t)
	rx := kernelSocket(t, e, unix.SOCK_DGRAM)
	sa, sl := m.sockaddr(loopback)
	if r := call(e, transport.OpBind, rx, sa, sl); r != 0 {
		t.Fatalf("bind = %d", r)
	}
	snap, _ := e.Socket(rx)
	tx := kernelSocket(t, e, unix.SOCK_DGRAM)
	dst, dl := m.sockaddr(snap.Local)
	msg, ml := m.bytes("ping")
	buf, _ := m.alloc(64)
	send := transport.Call{Op: transport.OpSendto, FD: tx, A: [5]uintptr{msg, ml, 0, dst, dl}}
	recv := transport.Call{Op: transport.OpRecvfrom, FD: rx, A: [5]uintptr{buf, 64, 0, 0, 0}}
	if e.Call(&send) != 4 || e.Call(&recv) != 4 { // decided, warmed up
		t.Fatal("first ping failed")
	}
	allocs := testing.AllocsPerRun(200, func() {
		if e.Call(&send) != 4 || e.Call(&recv) != 4 {
			t.Fatal("ping failed")
		}
	})
	if allocs != 0 {
		t.Fatalf("a send and a receive through the engine allocate %v times, want 0", allocs)
	}
}

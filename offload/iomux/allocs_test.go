package iomux

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/offload/internal/umem"
	"github.com/goxio/goxio/offload/transport"
)

// TestEpollWaitAllocs: an event loop's epoll_wait that finds a member ready in its transport
// allocates nothing (a waiter per call on the heap was most of the garbage event loops made).
func TestEpollWaitAllocs(t *testing.T) {
	for _, stream := range []bool{true, false} {
		f := newFixture(t, Params{})
		ep, _ := f.add(stream)
		epfd := f.epoll()
		f.mustCtl(epfd, unix.EPOLL_CTL_ADD, ep.FD, unix.EPOLLIN, 1)
		ep.Deliver(1)
		out := make([]byte, 4*umem.EpollEventSize)
		ts := &unix.Timespec{}
		c := transport.Call{Op: transport.OpEpollWait, FD: epfd, A: [5]uintptr{bytesAddr(out), 4, timespecAddr(ts)}}
		wantEvents(t, f.wait(epfd, 0), event{unix.EPOLLIN, 1})
		allocs := testing.AllocsPerRun(100, func() {
			if n := f.mux.EpollWait(&c); n != 1 {
				t.Fatalf("epoll_wait = %d", n)
			}
		})
		// Datagram members are collected into the waiter per call (w.socks): one allocation.
		want := 0.0
		if !stream {
			want = 1
		}
		t.Logf("stream %v: %v allocations per epoll_wait", stream, allocs)
		if allocs > want {
			t.Errorf("stream %v: epoll_wait allocates %v times per call, want at most %v", stream, allocs, want)
		}
	}
}

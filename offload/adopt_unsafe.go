package offload

import (
	"runtime"
	"unsafe"

	"github.com/goxio/goxio/offload/transport"
)

// epollCtlAt serves epoll_ctl c with its struct epoll_event in ev.
//
// Invariant: ev is a Go heap slice of at least one epoll_event; heap memory does not move, and
// the KeepAlive keeps it alive while the engine reads it through its address.
func (e *Engine) epollCtlAt(c *transport.Call, ev []byte) int64 {
	c.A[2] = uintptr(unsafe.Pointer(&ev[0]))
	r := e.mux.EpollCtl(c)
	runtime.KeepAlive(ev)
	return r
}

package shm

import (
	"github.com/goxio/goxio/offload/capture"
	ring "github.com/goxio/goxio/offload/shm"
	"github.com/goxio/goxio/offload/transport"
)

var _ transport.NonblockWatcher = (*UDP)(nil)

// Kernel reads without the engine (offload/shm hold_box_kread.go, shim/preload/box.c): after a
// plain receive that left the rings empty, the socket's box may tell the preload library that no
// sender has a ring to the socket, so its next plain receives read the kernel socket first
// themselves. Only while a receive here would read the kernel socket as the program asked, with
// nothing to order or filter: not while the socket goes back to the kernel or has datagrams
// spilled at a fork, kernel datagrams are to be ordered against a ring's (kernelFirst), multicast
// joins are to be told from loopback copies (joinSnap) or the transport's IP_PKTINFO is on, and
// not while a capture runs (it records the kernel path's datagrams too); the library looks at
// the capture word itself.

// kernelReadOn arms the box h.Box of fd when the socket's receives may read the kernel socket
// first, after a receive that found the rings empty. Everything that ends one of the conditions
// disarms it (kernelReadOff) after its own store, and this looks again after arming: one of
// the two sees the other.
func (u *UDP) kernelReadOn(fd int, h *transport.Held, in *ring.Inbox) {
	if in.RingsAttached() || u.RxKernel == nil || !u.kernelReadable() {
		return // a ring socket's receives: no lock taken
	}
	u.rxmu.Lock()
	armed := in.ArmKernelRead(h.Box, fd, u.RxKernel, u.nonblock())
	u.rxmu.Unlock()
	if armed && !u.kernelReadable() {
		in.DisarmKernelRead()
	}
}

// kernelReadable reports whether a receive may read the kernel socket before the rings as far as
// the socket's own state goes.
func (u *UDP) kernelReadable() bool {
	return !u.kernelOnly.Load() && !u.spill.Left() && !u.kernelFirst.Load() && u.joinSnap.Load() == nil &&
		!u.pktinfoOn.Load() && !capture.On()
}

// NonblockChanged disarms the box: the library answers EAGAIN itself only for the socket's
// O_NONBLOCK as it was armed with; the next receive that enters the engine arms it again.
func (u *UDP) NonblockChanged() { u.kernelReadOff() }

// kernelReadOff makes the library's plain receives enter the engine again; called after the
// store that ends a condition of kernelReadable.
func (u *UDP) kernelReadOff() {
	if in := u.inbox.Load(); in != nil {
		in.DisarmKernelRead()
	}
}

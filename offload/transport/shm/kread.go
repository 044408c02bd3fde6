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
// the capture word itself. A blocking receive that finds the kernel socket empty sleeps there
// too, on the kernel socket and the doorbell (shim/preload/kwait.c), when the engine's wait would
// sleep at once as well (kernelBell): no trip into the engine for a socket whose clients are slow.

// kernelReadOn arms the box h.Box of fd when the socket's receives may read the kernel socket
// first, after a receive that found the rings empty. Everything that ends one of the conditions
// disarms it (kernelReadOff) after its own store, and this looks again after arming: one of
// the two sees the other.
func (u *UDP) kernelReadOn(fd int, h *transport.Held, in *ring.Inbox) {
	if in.RingsAttached() || u.RxKernel == nil || !u.kernelReadable() {
		return // a ring socket's receives: no lock taken
	}
	bell, ok := u.kernelBell(in)
	if !ok {
		return
	}
	u.rxmu.Lock()
	armed := in.ArmKernelRead(h.Box, fd, u.kernelRead(bell))
	u.rxmu.Unlock()
	if armed && !u.kernelReadable() {
		in.DisarmKernelRead()
	}
}

// kernelBell is the doorbell the library's blocking receives sleep on with the kernel socket
// when they are to wait themselves: when the engine's wait would not spin either (VMA_RX_POLL 0,
// or the socket's receives typically wait longer than a spin is worth: wait.Avg). It is made now
// if it is not yet (the engine's first sleep makes it otherwise: a box armed without one would
// send its waits to the engine until a receive armed it again). -1 when the engine is to wait,
// spinning first: on a CPU shared with the peer a spin that yields hands it the CPU without a
// wake-up (measured, a socket per request on one CPU: 9.8 us a round with the library's sleep,
// 8.1 us the kernel's, 8.5 us the engine's spin). false when there is no fd for a doorbell (the
// socket went back to the kernel).
func (u *UDP) kernelBell(in *ring.Inbox) (int, bool) {
	if u.env.p.RxPoll != 0 && u.waitAvg.SpinWorth() {
		return -1, true
	}
	bell := u.ensureBell(in)
	return bell, bell >= 0
}

// kernelRead is what an armed box tells the library of the socket now; u.rxmu is held, which
// orders it with kernelReadUpdate: a change stored before that lock is in the box either way.
func (u *UDP) kernelRead(bell int) ring.KernelRead {
	return ring.KernelRead{Rx: u.RxKernel, Nonblock: u.nonblock(), Bell: bell, Timeout: u.rcvTimeo.Load()}
}

// kernelReadUpdate tells an armed box the socket's O_NONBLOCK and SO_RCVTIMEO after the program
// changed one: its next receives go on without the engine (a wait already under way keeps the
// timeout it began with, as the kernel's does).
func (u *UDP) kernelReadUpdate() {
	if !u.enter() {
		return
	}
	defer u.exit()
	in := u.inbox.Load()
	if in == nil || !in.KernelReadArmed() {
		return // nothing to update, and no doorbell to make for it
	}
	bell, ok := u.kernelBell(in)
	if !ok {
		return
	}
	u.rxmu.Lock()
	in.UpdateKernelRead(u.kernelRead(bell))
	u.rxmu.Unlock()
}

// kernelReadable reports whether a receive may read the kernel socket before the rings as far as
// the socket's own state goes.
func (u *UDP) kernelReadable() bool {
	return !u.kernelOnly.Load() && !u.spill.Left() && !u.kernelFirst.Load() && u.joinSnap.Load() == nil &&
		!u.pktinfoOn.Load() && !capture.On()
}

// NonblockChanged tells an armed box the socket's new O_NONBLOCK: the library answers EAGAIN, or
// waits, as the socket is now.
func (u *UDP) NonblockChanged() { u.kernelReadUpdate() }

// kernelReadOff makes the library's plain receives enter the engine again; called after the
// store that ends a condition of kernelReadable.
func (u *UDP) kernelReadOff() {
	if in := u.inbox.Load(); in != nil {
		in.DisarmKernelRead()
	}
}

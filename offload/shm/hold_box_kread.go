package shm

import "sync/atomic"

// Kernel read: a socket whose datagrams all come through its kernel socket (clients without
// goxio, or a new socket per request, whose first datagram goes through the kernel) gains
// nothing from a receive that enters the engine to find its rings empty and then reads the
// kernel socket. While no sender has a ring to the inbox, the box tells the preload library so
// (box.c, rx_kread): its plain receives read the kernel socket without blocking and without
// the engine, and enter it only when nothing is there (the engine then waits on both). Measured
// on the 2-CPU test machine, a UDP socket per request to a goxio server, both on one CPU: the
// engine's trip was ~1 us of the server's ~5.5 us a request.
//
// The box says so while its kread word is 1 and the inbox's sender generation is the one the
// engine saw with no ring attached: a sender registers its ring (bumping the generation) before
// it writes a record, so the library's look at the generation under the box's lock stands for
// the engine's look at the rings. Which source comes first between a look and a datagram
// arriving is as open as in the engine's own receive (rings, then the kernel socket).

// ArmKernelRead attaches the box at p (fd's, as UseBox) and lets the library's plain receives on
// fd read the kernel socket first while no sender has a ring to the inbox; they count into rx
// (the socket's kernel receive packets, bytes, EAGAIN and errors words), and with nonblock (the
// socket's O_NONBLOCK) answer EAGAIN themselves when the kernel socket is empty. False, and
// nothing armed, while any ring is attached or registered, records wait in the box or with the
// inbox, or the box is not the inbox's to use. The caller disarms it whenever the kernel socket
// is not to be read first (DisarmKernelRead). A consumer method.
func (in *Inbox) ArmKernelRead(p uintptr, fd int, rx *[4]uint64, nonblock bool) bool {
	if p == 0 || rx == nil || !in.enter() {
		return false
	}
	defer in.leave()
	gen := atomic.LoadUint64(in.genp)
	if gen != in.seenGen.Load() || in.RingsAttached() || in.lingering != 0 || in.BoxQueued() {
		return false
	}
	m := boxAt(p)
	if atomic.LoadUint32(&m.kread) == 1 && in.bx.mem.Load() == m && in.bx.fd == fd && atomic.LoadUint64(&m.kgen) == gen &&
		atomic.LoadUint32(&m.knb) == b2u(nonblock) {
		return true // armed since: the common case, no lock
	}
	if in.UseBox(p, fd) == 0 {
		return false
	}
	m.acquire()
	m.armKernel(in.genp, gen, rx, nonblock)
	m.release()
	return true
}

// RingsAttached reports whether any sender's ring is attached to the inbox: a look that needs no
// lock, before ArmKernelRead (safe from any goroutine).
func (in *Inbox) RingsAttached() bool { return len(*in.list.Load()) != 0 }

// DisarmKernelRead makes the library's plain receives enter the engine again (safe from any
// goroutine). A store without the box's lock: a receive that looked before it reads the kernel
// socket once more either way, as an engine receive already under way would.
func (in *Inbox) DisarmKernelRead() {
	if m := in.bx.mem.Load(); m != nil {
		atomic.StoreUint32(&m.kread, 0)
	}
}

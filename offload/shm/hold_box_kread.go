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

// KernelRead is what the library's plain receives on an armed box know of the socket
// (ArmKernelRead).
type KernelRead struct {
	Rx       *[4]uint64 // the socket's kernel receive words: packets, bytes, EAGAIN, errors
	Nonblock bool       // O_NONBLOCK: an empty kernel socket is the receive's EAGAIN
	// Bell is the socket's doorbell, on which a blocking receive that finds the kernel socket
	// empty waits in the library with the kernel socket; -1: none yet, the receive enters the
	// engine to wait.
	Bell    int
	Timeout int64 // SO_RCVTIMEO in ns, 0: none
}

// ArmKernelRead attaches the box at p (fd's, as UseBox) and lets the library's plain receives on
// fd read the kernel socket first while no sender has a ring to the inbox, as k says. With a
// doorbell in k, a blocking receive that finds the kernel socket empty waits in the library, on
// the kernel socket and the doorbell as the engine's sleep would, while the inbox's wake-up word
// is clear: a sender that registers rings the doorbell for its first record, and the receive
// enters the engine (without one it enters the engine at once). False, and nothing armed, while
// any ring is attached or registered, records wait in the box or with the inbox, or the box is
// not the inbox's to use. The caller disarms it whenever the kernel socket is not to be read
// first (DisarmKernelRead). A consumer method.
func (in *Inbox) ArmKernelRead(p uintptr, fd int, k KernelRead) bool {
	if p == 0 || k.Rx == nil || !in.enter() {
		return false
	}
	defer in.leave()
	gen := atomic.LoadUint64(in.genp)
	if gen != in.seenGen.Load() || in.RingsAttached() || in.lingering != 0 || in.BoxQueued() {
		return false
	}
	m := boxAt(p)
	if atomic.LoadUint32(&m.kread) == 1 && in.bx.mem.Load() == m && in.bx.fd == fd && atomic.LoadUint64(&m.kgen) == gen &&
		atomic.LoadUint32(&m.knb) == b2u(k.Nonblock) && atomic.LoadInt32(&m.kbell) == int32(k.Bell) &&
		atomic.LoadInt64(&m.ktimeo) == k.Timeout {
		return true // armed since: the common case, no lock
	}
	if in.UseBox(p, fd) == 0 {
		return false
	}
	m.acquire()
	m.armKernel(in.genp, gen, k.Rx, k.Nonblock, in.wakePending, k.Bell, k.Timeout)
	m.release()
	return true
}

// UpdateKernelRead changes what the library's receives on an armed box know of the socket (its
// O_NONBLOCK, doorbell, timeout) in place, so that a program's fcntl or setsockopt does not send
// them back to the engine to arm it again; nothing when the box is not armed. Called under the
// consumer's lock, as ArmKernelRead.
func (in *Inbox) UpdateKernelRead(k KernelRead) {
	if !in.enter() {
		return
	}
	defer in.leave()
	m := in.bx.mem.Load()
	if m == nil {
		return
	}
	m.acquire()
	if m.kread == 1 && m.attached != 0 {
		m.knb = b2u(k.Nonblock)
		m.kbell = int32(k.Bell)
		m.ktimeo = k.Timeout
	}
	m.release()
}

// KernelReadArmed reports whether the inbox's box lets the library read the kernel socket (a
// look without the box's lock: safe from any goroutine).
func (in *Inbox) KernelReadArmed() bool {
	m := in.bx.mem.Load()
	return m != nil && atomic.LoadUint32(&m.kread) != 0
}

// KernelSleepers is how many of the library's receives wait on the socket's kernel socket and
// doorbell (ArmKernelRead): the engine rings the doorbell for them as for its own sleepers (safe
// from any goroutine).
func (in *Inbox) KernelSleepers() int32 {
	if m := in.bx.mem.Load(); m != nil {
		return atomic.LoadInt32(&m.ksleep)
	}
	return 0
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

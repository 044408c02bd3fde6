package main

/*
#include "engine.h"
*/
import "C"

import (
	"net/netip"
	"unsafe"

	"github.com/goxio/goxio/offload"
	shmtr "github.com/goxio/goxio/offload/transport/shm"
	"github.com/goxio/goxio/offload/transport/shmtcp"
)

// earlyPhase hands the pairing table to the preload library, which then serves the early phase
// of connections between goxio processes in C (shim/preload/early.c), and returns how the engine
// marks the listeners whose accepts it may serve; nil when there is no early phase (no
// shared-memory TCP, no table, or no cache of destinations, whose TCP keys tell connect where
// goxio listeners are).
//
// Invariant: the table is mapped for the process's life (shmtcp.Env never unmaps it), and so is
// the statistics segment that holds closed (nil without one), so the addresses C keeps stay
// valid; C reads and writes them with atomic word accesses only, as the Go side does.
func earlyPhase(tcp *shmtcp.Env, shm *shmtr.Env, ksend offload.KernelSends, closed *uint64) func(fd, domain int) {
	if tcp == nil || shm == nil || ksend == nil {
		return nil
	}
	pairs, after, grace := tcp.Early()
	if pairs == nil {
		return nil
	}
	mem, start := pairs.Mapping()
	if len(mem) == 0 {
		return nil
	}
	C.goxio_early_setup((*C.uint64_t)(unsafe.Pointer(&mem[0])), C.uint64_t(start), C.int(after), C.uint64_t(grace.Nanoseconds()),
		(*C.uint64_t)(unsafe.Pointer(closed)))
	return func(fd, domain int) { C.goxio_early_listener(C.int(fd), C.int(domain)) }
}

// plainListener marks fd, a listener whose connections are the kernel's for good: its accepts
// make plain fds in C (shim/preload/early.c).
func plainListener(fd int) { C.goxio_early_listener(C.int(fd), C.GOXIO_LISTENER_PLAIN) }

// cSockaddr decodes the destination a UDP socket's early phase sent to: 28 bytes at p (a struct
// sockaddr_in or sockaddr_in6, zero-filled after it), the handover's dst or host.c's copy of it.
//
// Invariant: p points to C memory of at least 28 bytes (a fixed array of the handover host.c
// copied, or host.c's array on the C stack) that lives until the engine's call returns.
func cSockaddr(p *C.uint8_t) netip.AddrPort {
	if p == nil {
		return netip.AddrPort{}
	}
	return offload.ParseSockaddr(unsafe.Slice((*byte)(unsafe.Pointer(p)), 28))
}

// earlySpin tells the preload library whether a blocking receive of a UDP socket in its early
// phase polls before it sleeps (shim/preload/early_wait.c): as the engine's receives do, unless
// VMA_RX_POLL is 0. The library decided from the environment until now; this adds what a
// parameters file says.
func earlySpin(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.goxio_early_spin(v)
}

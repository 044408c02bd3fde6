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

// earlyDst is the destination a UDP socket's early phase sent to (h.dst, a struct sockaddr_in or
// sockaddr_in6 the preload library copied from the program's sendto).
//
// Invariant: h points to the handover C passed for this call (host.c copies it), alive until it
// returns; dst is a fixed array inside it.
func earlyDst(h *C.struct_goxio_early_handover) netip.AddrPort {
	return sockaddrBytes(unsafe.Slice((*byte)(unsafe.Pointer(&h.dst[0])), len(h.dst)))
}

// lazyDst is the destination a UDP socket made before the engine sent to through the kernel in its
// early phase (dst: 28 bytes, a struct sockaddr_in or sockaddr_in6, host.c's copy).
//
// Invariant: dst points to host.c's array on the C stack of the adopting call, alive until it
// returns.
func lazyDst(dst *C.uint8_t) netip.AddrPort {
	if dst == nil {
		return netip.AddrPort{}
	}
	return sockaddrBytes(unsafe.Slice((*byte)(unsafe.Pointer(dst)), 28))
}

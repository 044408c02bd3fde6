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
	xdptr "github.com/goxio/goxio/offload/transport/xdp"
)

// The sending trampoline's cache of destinations without a goxio receiver
// (shim/preload/ksend.c), as the engine feeds it.
//
// Invariant for the pointers handed to C: the discovery directory's generation word and the
// statistics slot's counter words lie in shared mappings (not Go memory) that stay mapped for
// the process's life (the directory is never unmapped; a closed statistics segment is retired
// to private memory, internal/shmseg.Retire), so C may keep and read or add to them at any time;
// so does the segment's capture word (stats.Writer.CaptureWord).

// cKernelSends is offload.KernelSends over ksend.c.
type cKernelSends struct{}

// Allow lets sendto on fd skip the engine for cached destinations, counting into words.
func (cKernelSends) Allow(fd int, words *[4]uint64) {
	C.goxio_ksend_fd(C.int(fd), (*C.uint64_t)(unsafe.Pointer(words)))
}

// Drop withdraws Allow (and Peer).
func (cKernelSends) Drop(fd int) { C.goxio_ksend_drop(C.int(fd)) }

// Peer records fd's connected IPv4 peer (the zero value, or another family: none).
func (cKernelSends) Peer(fd int, peer netip.AddrPort) {
	a := peer.Addr().Unmap()
	if !a.Is4() {
		C.goxio_ksend_peer(C.int(fd), 0, 0)
		return
	}
	b := a.As4()
	C.goxio_ksend_peer(C.int(fd), C.uint32_t(uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])), C.uint16_t(peer.Port()))
}

// kernelSends hands the directory's generation word to the C side and returns the cache, or nil
// when there is no shared-memory UDP transport or the AF_XDP one is on (its sends batch, and a
// send that skips the engine would not flush them).
func kernelSends(shm *shmtr.Env, xdp *xdptr.Env, capture *uint64) offload.KernelSends {
	if shm == nil || xdp != nil {
		return nil
	}
	gen := shm.GenWord()
	if gen == nil {
		return nil
	}
	C.goxio_ksend_setup((*C.uint64_t)(unsafe.Pointer(gen)), (*C.uint64_t)(unsafe.Pointer(capture)))
	return cKernelSends{}
}

// extraAPIUsed reports whether the program was handed VMA's extra API (vma_extra.c).
func extraAPIUsed() bool { return C.goxio_vma_api_used() != 0 }

// kernelRoute tells the C side that no goxio socket is bound to dst at generation gen.
func kernelRoute(dst netip.AddrPort, gen uint64) {
	a := dst.Addr().Unmap()
	if !a.Is4() {
		return
	}
	b := a.As4()
	C.goxio_ksend_put(C.uint32_t(uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])),
		C.uint16_t(dst.Port()), C.uint64_t(gen))
}

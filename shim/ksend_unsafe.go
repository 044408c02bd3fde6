package main

/*
#include "engine.h"
*/
import "C"

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

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

// Drop withdraws Allow (and Peer), and the fd's ring route.
func (cKernelSends) Drop(fd int) {
	C.goxio_ksend_drop(C.int(fd))
	C.goxio_rsend_drop(C.int(fd))
}

// Peer records fd's connected peer (the zero value: none).
func (cKernelSends) Peer(fd int, peer netip.AddrPort) {
	if !peer.IsValid() {
		C.goxio_ksend_peer(C.int(fd), nil, 0)
		return
	}
	withSockaddr(peer, func(sa *C.struct_sockaddr, n C.socklen_t) { C.goxio_ksend_peer(C.int(fd), sa, n) })
}

// withSockaddr calls f with a as a sockaddr_in (IPv4, IPv4-mapped) or sockaddr_in6.
//
// Invariant: the sockaddr lives on this goroutine's stack for f's call only and holds no Go
// pointer, so handing its address to C breaks no cgo rule; C copies what it needs.
func withSockaddr(a netip.AddrPort, f func(sa *C.struct_sockaddr, n C.socklen_t)) {
	var port [2]byte
	binary.BigEndian.PutUint16(port[:], a.Port())
	if ip := a.Addr().Unmap(); ip.Is4() {
		sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Port: *(*uint16)(unsafe.Pointer(&port)), Addr: ip.As4()}
		f((*C.struct_sockaddr)(unsafe.Pointer(&sa)), unix.SizeofSockaddrInet4)
		return
	}
	sa := unix.RawSockaddrInet6{Family: unix.AF_INET6, Port: *(*uint16)(unsafe.Pointer(&port)), Addr: a.Addr().As16()}
	f((*C.struct_sockaddr)(unsafe.Pointer(&sa)), unix.SizeofSockaddrInet6)
}

// kernelSends hands the directory's generation word to the C side and returns the cache, or nil
// when there is no shared-memory UDP transport or the AF_XDP one is on (its sends batch, and a
// send that skips the engine would not flush them).
func kernelSends(shm *shmtr.Env, xdp *xdptr.Env, capture, plain *uint64) offload.KernelSends {
	if shm == nil || xdp != nil {
		return nil
	}
	gen := shm.GenWord()
	if gen == nil {
		return nil
	}
	h := C.goxio_ksend_setup((*C.uint64_t)(unsafe.Pointer(gen)), (*C.uint64_t)(unsafe.Pointer(capture)),
		(*C.uint64_t)(unsafe.Pointer(plain)))
	// h: two uint32_t of the preload library's static memory (ksend.c), aligned, for the
	// process's life, which the C side writes only with atomic stores.
	words := (*[2]atomic.Uint32)(unsafe.Pointer(h))
	offload.KernelSendHandoff(&words[0], &words[1])
	shm.UseRingRoute(ringRoute)
	return cKernelSends{}
}

// ringRoute hands the route of fd's last ring send to the library's sending trampoline
// (shim/preload/rsend.c).
//
// Invariant: every address in r (the producer state, the gate, the counters) is memory outside Go
// that stays valid for the process's life (offload/shm prod_unsafe.go; the statistics words as
// above); the route is built on this goroutine's stack and copied by C.
func ringRoute(fd int, r *shmtr.TxRoute) {
	var c C.struct_goxio_txroute
	if len(r.Bell) > len(c.bell) || len(r.Name) > len(c.name) {
		return
	}
	if r.Peer {
		c.peer = 1
	}
	c.max = C.uint32_t(r.Max)
	c.family = C.uint32_t(r.Family)
	c.gen = C.uint64_t(r.Gen)
	c.prod = C.uint64_t(r.Prod)
	c.epoch = C.uint64_t(r.Epoch)
	c.gate = C.uint64_t(r.Gate)
	c.gate_val = C.uint64_t(r.GateVal)
	c.kcount = C.uint64_t(uintptr(unsafe.Pointer(r.KCount)))
	c.kseen = C.uint64_t(r.KSeen)
	c.sock_tx = C.uint64_t(uintptr(unsafe.Pointer(r.SockTx)))
	c.ringer = C.int32_t(r.Ringer)
	c.bell_len = C.uint32_t(len(r.Bell))
	for i, b := range r.Bell {
		c.bell[i] = C.uint8_t(b)
	}
	c.namelen = C.uint32_t(len(r.Name))
	for i, b := range r.Name {
		c.name[i] = C.uint8_t(b)
	}
	withSockaddr(r.Dst, func(sa *C.struct_sockaddr, n C.socklen_t) { C.goxio_rsend_set(C.int(fd), &c, sa, n) })
}

// extraAPIUsed reports whether the program was handed VMA's extra API (vma_extra.c).
func extraAPIUsed() bool { return C.goxio_vma_api_used() != 0 }

// listenerSeen tells the C side whether a goxio socket listens at dst at generation gen.
func listenerSeen(dst netip.AddrPort, gen uint64, goxio bool) {
	g := C.int(0)
	if goxio {
		g = 1
	}
	withSockaddr(dst, func(sa *C.struct_sockaddr, n C.socklen_t) { C.goxio_ksend_put_tcp(sa, n, C.uint64_t(gen), g) })
}

// kernelRoute tells the C side that no goxio socket is bound to dst at generation gen.
func kernelRoute(dst netip.AddrPort, gen uint64) {
	withSockaddr(dst, func(sa *C.struct_sockaddr, n C.socklen_t) { C.goxio_ksend_put(sa, n, C.uint64_t(gen)) })
}

package main

/*
#include "engine.h"
*/
import "C"

import (
	"net/netip"
	"time"

	"github.com/goxio/goxio/offload"
	"github.com/goxio/goxio/offload/transport"
)

// goxio_go_adopt takes over fd, a socket or epoll set the process made before the engine was
// loaded (loader.c calls it for each fd flagged lazy), and clears its lazy flags.
//
//export goxio_go_adopt
func goxio_go_adopt(fd C.int, how C.uint32_t, ref C.int, addr C.uint32_t, port C.int, txp, txb, txa, txe, rxp, rxb C.uint64_t, dst *C.uint8_t) {
	if e := lib.engine; e != nil {
		l := offload.Lazy{
			Accepted:  how&C.GOXIO_LAZY_ACCEPTED != 0,
			Listener:  int(ref),
			Connected: how&C.GOXIO_LAZY_CONNECTED != 0,
			IPOptions: how&C.GOXIO_LAZY_MCAST != 0,
			Forked:    how&C.GOXIO_LAZY_FORKED != 0,
			Child:     how&C.GOXIO_LAZY_CHILD != 0,
			RcvBuf:    how&C.GOXIO_LAZY_RCVBUF != 0,
			KernelTx:  [4]uint64{uint64(txp), uint64(txb), uint64(txa), uint64(txe)},
		}
		if how&C.GOXIO_LAZY_KERNEL_DST != 0 {
			l.KernelDst = cSockaddr(dst)
			l.KernelRx = [2]uint64{uint64(rxp), uint64(rxb)}
		}
		if port >= 0 {
			a := uint32(addr)
			l.Peer = netip.AddrPortFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), uint16(port))
		}
		e.Adopt(int(fd), l)
	}
	if fl := C.goxio_fdt_get(fd); fl&(C.GOXIO_FD_LAZY|C.GOXIO_FD_LAZY_EPOLL) != 0 {
		C.goxio_fdt_set(fd, fl&^(C.GOXIO_FD_LAZY|C.GOXIO_FD_LAZY_EPOLL))
	}
}

// goxio_go_early takes over fd, a TCP connection or a UDP socket the preload library served in its early phase
// (shim/preload/early.c; h is goxio_engine.early's). The library clears the fd's lazy flag once
// this returns: until then the program's other threads wait.
//
//export goxio_go_early
func goxio_go_early(fd C.int, h *C.struct_goxio_early_handover) {
	if e := lib.engine; e != nil {
		l := offload.Lazy{
			Accepted:  h.how&C.GOXIO_LAZY_ACCEPTED != 0,
			Listener:  int(h.listener),
			Connected: h.how&C.GOXIO_LAZY_CONNECTED != 0,
			NoOptions: h.options == 0,
		}
		p := transport.EarlyPhase{Calls: int(h.calls), KernTx: uint64(h.ktx), KernRx: uint64(h.krx),
			Age: time.Duration(h.age_ns), NoPair: h.nopair != 0, ShutRead: h.shut&1 != 0, ShutWrite: h.shut&2 != 0}
		if h.udp != 0 {
			l.KernelTx = [4]uint64{uint64(h.tx[0]), uint64(h.tx[1]), uint64(h.tx[2]), uint64(h.tx[3])}
			l.KernelRx = [2]uint64{uint64(h.rx[0]), uint64(h.rx[1])}
			l.KernelDst = cSockaddr(&h.dst[0])
		}
		e.AdoptEarly(int(fd), int(h.domain), int(h._type), int(h.protocol), l, p)
	}
}

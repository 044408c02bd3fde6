package main

/*
#include "engine.h"
*/
import "C"

import (
	"net/netip"

	"github.com/goxio/goxio/offload"
)

// goxio_go_adopt takes over fd, a socket or epoll set the process made before the engine was
// loaded (loader.c calls it for each fd flagged lazy), and clears its lazy flags.
//
//export goxio_go_adopt
func goxio_go_adopt(fd C.int, how C.uint32_t, ref C.int, addr C.uint32_t, port C.int, txp, txb, txa, txe C.uint64_t) {
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

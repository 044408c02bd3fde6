package main

/*
#include "engine.h"
*/
import "C"

import (
	"unsafe"

	"github.com/goxio/goxio/offload/transport"
)

// sigCounters returns the calling thread's signal-handler counters (signal.c).
// Invariant: struct goxio_sig_counters is three unsigned ints, laid out as transport.SigCounters,
// in the thread's TLS, which lives as long as the thread; the caller uses the pointer only on this
// thread, during the call it made it for.
func sigCounters() *transport.SigCounters {
	return (*transport.SigCounters)(unsafe.Pointer(C.goxio_sig_counters()))
}

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
// Invariant: struct goxio_sig_counters (goxio.h) is laid out as transport.SigCounters (six unsigned
// ints and a struct timespec; the sizes are compared at compile time below),
// in the thread's TLS, which lives as long as the thread; the caller uses the pointer only on this
// thread, during the call it made it for.
func sigCounters() *transport.SigCounters {
	return (*transport.SigCounters)(unsafe.Pointer(C.goxio_sig_counters()))
}

// The C struct and the Go view have one size: either difference below overflows a uintptr
// constant, which does not compile, when they differ.
const (
	_ = uintptr(C.sizeof_struct_goxio_sig_counters - unsafe.Sizeof(transport.SigCounters{}))
	_ = uintptr(unsafe.Sizeof(transport.SigCounters{}) - C.sizeof_struct_goxio_sig_counters)
)

package main

/*
#include "engine.h"
*/
import "C"

import (
	"github.com/goxio/goxio/offload/transport"
	"github.com/goxio/goxio/offload/transport/kernel"
)

// goxio_go_call is the engine's entry point from every trampoline (boundary.c). It returns the
// call's result or -errno.
//
//export goxio_go_call
func goxio_go_call(op C.int, fd C.int, a0, a1, a2, a3, a4 C.uintptr_t) C.long {
	c := transport.Call{Op: transport.Op(op), FD: int(fd),
		A: [5]uintptr{uintptr(a0), uintptr(a1), uintptr(a2), uintptr(a3), uintptr(a4)}}
	e := lib.engine
	if e == nil {
		// The engine could not start (ready is never set then, so this is a stale table flag).
		n, errno := kernel.Do(&c)
		if errno != 0 {
			return -C.long(errno)
		}
		return C.long(n)
	}
	return C.long(e.Call(&c))
}

// goxio_go_start is called by goxio_engine_init (host.c), on the thread whose call made the
// preload library load the engine. Like every exported function it only runs once the Go
// initialization has finished; it then starts the engine (start, init.go). It returns 1 when the
// engine serves calls.
//
//export goxio_go_start
func goxio_go_start() C.int {
	start()
	if lib.engine == nil {
		return 0
	}
	return 1
}

// goxio_go_prefork runs in the parent just before fork or daemon: the engine hands its
// shared-memory sockets back to the kernel and spills what their rings held (shim/spill.c).
//
//export goxio_go_prefork
func goxio_go_prefork() {
	if e := lib.engine; e != nil {
		e.BeforeFork(cTable{})
	}
}

// goxio_go_prespawn runs in the parent just before posix_spawn, system or popen: the engine hands
// the shared-memory sockets the child inherits back to the kernel (offload/spawn.go); all: every
// socket (file actions may make any fd inherited).
//
//export goxio_go_prespawn
func goxio_go_prespawn(all C.int) {
	if e := lib.engine; e != nil {
		e.BeforeSpawn(cTable{}, all != 0)
	}
}

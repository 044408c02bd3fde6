// The go:debug settings keep the Go runtime out of the program's fd space: no cgroup files held
// open for GOMAXPROCS updates. They must precede the package clause.

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command libgoxio-engine is built with -buildmode=c-shared into libgoxio-engine.so: the Go
// engine, which the preload library (libgoxio.so, plain C, in shim/preload) loads with dlopen
// when a process first moves data on, or waits on, an inet socket.
//
// goxio.h is the contract between the two libraries; host.c is the engine's side of it (the one
// init call, goxio_engine_init); the Go files start the engine (start, init.go) and are its entry
// points from C.
package main

/*
#cgo CFLAGS: -D_GNU_SOURCE -O2 -Wall -Wno-unused-function
#cgo LDFLAGS: -ldl -lpthread -Wl,--wrap=pthread_create
#include "engine.h"
*/
import "C"

func main() {}

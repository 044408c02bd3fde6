// Command libgoxio is built with -buildmode=c-shared into libgoxio.so: the library a program
// preloads (LD_PRELOAD=libgoxio.so) to have its sockets served by goxio.
//
// The C files of this package are the interception layer (see goxio.h); the Go files start the
// engine and are the engine's single entry point from C.
package main

// The go:debug settings keep the Go runtime out of the program's fd space and signal traffic:
// no cgroup files held open for GOMAXPROCS updates, and no preemption signals (SIGURG) sent to
// threads that may be inside the program's blocking calls.

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
//go:debug asyncpreemptoff=1

/*
#cgo CFLAGS: -O2 -Wall -Wno-unused-function
#cgo LDFLAGS: -ldl -lpthread
#include "goxio.h"
*/
import "C"

func main() {}

// The go:debug settings keep the Go runtime out of the program's fd space: no cgroup files held
// open for GOMAXPROCS updates. They must precede the package clause.

//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command libgoxio is built with -buildmode=c-shared into libgoxio.so: the library a program
// preloads (LD_PRELOAD=libgoxio.so) to have its sockets served by goxio.
//
// The C files of this package are the interception layer (see goxio.h); the Go files start the
// engine and are the engine's single entry point from C.
package main

/*
#cgo CFLAGS: -D_GNU_SOURCE -O2 -Wall -Wno-unused-function
#cgo LDFLAGS: -ldl -lpthread -Wl,--wrap=pthread_create
#include "goxio.h"
*/
import "C"

func main() {}

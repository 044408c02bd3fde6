package main

/*
#include "engine.h"
*/
import "C"

// cTable is the C-side fd table (fdtable.c) as the engine sees it.
type cTable struct{}

// Set writes the flags of fd.
func (cTable) Set(fd int, flags uint8) { C.goxio_fdt_set(C.int(fd), C.int(flags)) }

// Tag is the epoll data that marks the engine's inner epoll fd fd in a program's epoll set.
func (cTable) Tag(fd int) uint64 { return uint64(C.goxio_fdt_tag(C.int(fd))) }

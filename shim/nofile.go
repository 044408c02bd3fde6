package main

// #include "engine.h"
import "C"

import "syscall"

// The program's fd limit. Go's syscall package raises the process's soft RLIMIT_NOFILE to the
// hard limit - 1 when it initialises (go.dev/issue/46279), which it does in the library's Go
// runtime as in a Go program: without more, a program that preloads goxio finds its soft limit
// changed once the engine loads (1024 -> 524287 under a common systemd hard limit), its children
// inherit that, and a program that relies on the soft limit to keep its descriptors below
// FD_SETSIZE for select() could get one above it and overflow its fd_set. So the engine puts the
// program's soft limit back (the one the preload library read before the load) first thing,
// before the runtime's netpoller is placed below it (offload.StartNetpoller).

// restoreFileLimit sets the soft RLIMIT_NOFILE back to the program's, when the Go runtime's
// initialisation changed it (to hard - 1) and nothing else did; it reports the limit restored
// (0: none).
func restoreFileLimit() uint64 {
	before := int64(C.goxio_nofile_cur())
	if before < 0 {
		return 0
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	// Only the runtime's own change: the value it sets, from a different one (a program thread
	// that set its limit meanwhile keeps its own).
	if lim.Cur == uint64(before) || lim.Max == 0 || lim.Cur != lim.Max-1 || uint64(before) > lim.Max {
		return 0
	}
	lim.Cur = uint64(before)
	// syscall.Setrlimit also forgets the runtime's note of the original limit, which it would
	// otherwise restore in children it starts (the engine starts none).
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	return lim.Cur
}

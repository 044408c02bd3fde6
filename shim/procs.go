package main

import (
	"os"
	"runtime"
)

// minProcs is the fewest processors (Ps) the library's Go runtime gets, whatever the CPU count.
//
// A program thread that calls into the library runs Go code on a P, and when it returns to C it
// keeps that P in the "system call" state: the runtime's monitor thread (sysmon) takes it back
// only after 20 µs to 10 ms, and only while the monitor gets a CPU. With as many Ps as CPUs, a
// third thread calling in on a 2-CPU machine waits for that hand-back; measured with 12 threads
// calling sendto and recvfrom on 2 busy CPUs (GOMAXPROCS 2): p99 of a call 18 ms, 1,137 of 60,000
// calls over 1 ms. With 16 Ps: p99 7 µs, p99.9 117 µs, 30 over 1 ms (most of them the first
// call of a thread). An idle P costs little: ~20 KB, and no thread until a goroutine needs one
// (the library starts none per call); a garbage collection may start a few more worker threads.
const minProcs = 32

// raiseProcs gives the runtime max(CPUs, minProcs) Ps unless the environment sets GOMAXPROCS
// (the runtime then honours it). It returns the count in effect.
func raiseProcs() int {
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < minProcs {
		runtime.GOMAXPROCS(max(runtime.NumCPU(), minProcs))
	}
	return runtime.GOMAXPROCS(0)
}

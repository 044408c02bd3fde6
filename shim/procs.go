package main

import (
	"os"
	"runtime"

	"go.uber.org/zap"
)

// minProcs is the fewest processors (Ps) the library's Go runtime gets once a second thread calls
// into it, whatever the CPU count.
//
// A program thread that calls into the library runs Go code on a P, and when it returns to C it
// keeps that P in the "system call" state: the runtime's monitor thread (sysmon) takes it back
// only after 20 µs to 10 ms, and only while the monitor gets a CPU. With as many Ps as CPUs, a
// third thread calling in on a 2-CPU machine waits for that hand-back; measured with 12 threads
// calling sendto and recvfrom on 2 busy CPUs (GOMAXPROCS 2): p99 of a call 18 ms, 1,137 of 60,000
// calls over 1 ms. With 32 Ps: p99 7.8 µs, 16-19 over 1 ms (most of them the first call of a
// thread). An idle P costs ~20 KB and no thread until a goroutine needs one (the library starts
// none per call); a garbage collection may start a few more worker threads.
//
// The Ps are added when a second thread first calls into the engine (goxio_go_threads), not at
// start: making them costs ~0.5 ms (memory for 30 Ps, one stop of the world), 5-8% of the
// start-up of a program like /bin/true, which a single-threaded program never needs.
const minProcs = 32

// startProcs is the fewest Ps the runtime has from the start. A thread that blocks in a system call
// the engine makes for it (a receive on a kernel socket, an accept, a connect) holds its P in the
// "system call" state; while no other P is idle the monitor takes it back after 20 µs, and then
// stays at its 20 µs period as long as that happens. A process restricted to one CPU (taskset, a
// cpuset, a container with one CPU) starts with one P, so every blocking call cost a hand-back, a
// reacquisition and the monitor's wake-ups on the same CPU: a TCP connection per request to a
// goxio server pinned to one CPU took 1.48x the kernel's p50 (1.06x with two Ps), both ends under
// goxio 2.53x (1.39x).
const startProcs = 2

// procsTarget returns how many Ps the runtime should have once several threads call in:
// max(CPUs, minProcs), or what GOMAXPROCS in the environment says (the runtime honours it and
// the library never changes it then).
func procsTarget() int {
	if procsFromEnv() {
		return runtime.GOMAXPROCS(0)
	}
	return max(runtime.NumCPU(), minProcs)
}

// procsFromEnv reports whether GOMAXPROCS is in the environment: the runtime honours it and the
// library never changes the Ps then.
func procsFromEnv() bool { return os.Getenv("GOMAXPROCS") != "" }

// startingProcs gives the runtime startProcs Ps if it has fewer and GOMAXPROCS is not in the
// environment; it returns the count it set, or 0.
func startingProcs() int {
	if procsFromEnv() || !raiseProcs(startProcs, nil) {
		return 0
	}
	return startProcs
}

// raiseProcs gives the runtime target Ps if it has fewer, logging the change (log nil: not
// logged); it reports whether it did.
func raiseProcs(target int, log *zap.Logger) bool {
	cur := runtime.GOMAXPROCS(0)
	if cur >= target {
		return false
	}
	runtime.GOMAXPROCS(target)
	if log != nil {
		log.Debug("Go runtime: a second thread calls into goxio", zap.Int("GOMAXPROCS", target), zap.Int("was", cur))
	}
	return true
}

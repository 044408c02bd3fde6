package main

/*
#include "engine.h"
*/
import "C"

import (
	"go.uber.org/zap"

	"github.com/goxio/goxio/offload/transport/udpcall"
)

// The shared-memory transport gives the Go runtime's monitor thread (sysmon) SCHED_IDLE (unless
// GOXIO_SHM_SYSMON=normal, or the process could not give it its class back: sysmon.c): its
// wake-ups otherwise preempt the program's polling threads and make the p99.9 latency. An
// idle-class monitor runs only when a CPU has nothing else to do, and one of its jobs is to take
// back the P (Go processor) a thread keeps while it is back in C: a program thread that calls in
// while every P is held waits for it, which on a saturated machine took seconds (48 threads on 2
// busy CPUs, 32 Ps: max 3.7 s, against 0.2 s with a normal monitor). So the monitor is quiet only
// while few threads use the library: boundary.c counts the threads that call in, and once more
// than half the Ps' worth have, the monitor gets its normal priority back for the process's life.
// GOMAXPROCS set higher keeps it quiet for more threads. The same count gives the runtime its Ps
// when a second thread calls in (procs.go).

// procsWanted is the Ps the runtime gets at the second thread's first call (procsTarget).
var procsWanted int

// watchThreads arms the thread count for a runtime that gets procs Ps from the second thread on;
// it runs before the engine is ready, so before any thread is counted.
func watchThreads(procs int) {
	procsWanted = procs
	C.goxio_set_quiet_threads(C.int(max(procs/2, 1)))
}

// goxio_go_threads is called by the thread whose first call into the engine made the count n
// reach 2 (the runtime gets its Ps) or exceed goxio_quiet_threads (the monitor gets its priority
// back); each happens once per process.
//
//export goxio_go_threads
func goxio_go_threads(n C.int) {
	if n == 2 {
		raiseProcs(procsWanted, lib.log)
	}
	if n <= C.goxio_get_quiet_threads() {
		return
	}
	tid, err := udpcall.LoudSysmon()
	log := lib.log
	if log == nil {
		return
	}
	switch {
	case err != nil:
		log.Warn("many threads call into goxio, and the Go runtime's monitor thread could not get its normal priority back",
			zap.Int("threads", int(n)), zap.Error(err))
	case tid != 0:
		log.Debug("many threads call into goxio: the Go runtime's monitor thread gets its normal priority back (set GOMAXPROCS above twice the thread count to keep it idle)",
			zap.Int("threads", int(n)), zap.Int("tid", tid), zap.Int("limit", int(C.goxio_get_quiet_threads())))
	default:
		log.Debug("many threads call into goxio: the Go runtime's monitor thread keeps its normal priority",
			zap.Int("threads", int(n)), zap.Int("limit", int(C.goxio_get_quiet_threads())))
	}
}

package main

/*
#include "engine.h"

void goxio_sysmon_guard(int tid, int policy, int priority, long slack);
int goxio_sysmon_probe(int policy, int priority, int nice);
void goxio_sysmon_started(long *guarded, long *idle);
*/
import "C"

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysmonGuard is the shared-memory transport's udpcall.Guard: the pthread_create wrapper and
// the restorability probe of sysmon.c.
type sysmonGuard struct{}

// Restorable tries, on a short-lived thread, the round trip from SCHED_IDLE to former.
func (sysmonGuard) Restorable(former unix.SchedAttr) error {
	if rc := C.goxio_sysmon_probe(C.int(former.Policy), C.int(former.Priority), C.int(former.Nice)); rc != 0 {
		return fmt.Errorf("sysmon probe: sched_setattr from SCHED_IDLE: %w", syscall.Errno(rc))
	}
	return nil
}

// Guard publishes the idle monitor's thread id, former class and timer slack to the
// pthread_create wrapper.
func (sysmonGuard) Guard(tid int, former unix.SchedAttr, formerSlack int64) {
	C.goxio_sysmon_guard(C.int(tid), C.int(former.Policy), C.int(former.Priority), C.long(formerSlack))
}

// sysmonStarted returns how many threads the idle monitor started with its former class, and
// how many inherited the idle class because the system refused the former one.
func sysmonStarted() (guarded, idle int) {
	var g, i C.long
	C.goxio_sysmon_started(&g, &i)
	return int(g), int(i)
}

/*
 * sysmon.c: keeps the Go runtime's monitor thread's idle class to that thread.
 *
 * The shared-memory transport gives the runtime's monitor thread (sysmon) SCHED_IDLE
 * (udpcall.QuietSysmon): its wake-ups otherwise preempt the program's polling threads. Linux
 * gives a new thread the class of the thread that creates it, and the monitor creates runtime
 * threads (an M to hand a P it took back to): those would run SCHED_IDLE too, and an idle-class
 * runtime worker stalls the world on a saturated machine. So:
 *
 *  - pthread_create is wrapped (-Wl,--wrap=pthread_create, set in main.go): the wrapper sees only
 *    the calls made by this library's own code, the runtime's thread start (runtime/cgo) and
 *    ours; the program's calls go to libc as before. When the caller is the quiet monitor, the
 *    new thread gets the monitor's former policy and priority explicitly
 *    (PTHREAD_EXPLICIT_SCHED; its nice value is inherited, and QuietSysmon keeps the monitor's),
 *    and, when QuietSysmon also widened the monitor's timer slack, sets its own slack back to the
 *    monitor's former one first thing (a thread may always set its own).
 *  - Moving a thread out of SCHED_IDLE needs CAP_SYS_NICE or an RLIMIT_NICE of at least 20 (the
 *    kernel checks the target thread's limit), and without it the explicit policy would fail the
 *    runtime's thread start. goxio_sysmon_probe tries the round trip on a short-lived thread of
 *    its own first; QuietSysmon leaves the monitor alone when it fails. Should the explicit start
 *    still fail with EPERM, the wrapper starts the thread the runtime's way (inheriting the idle
 *    class) rather than failing it, and counts it.
 *
 * Ownership: quiet_* are written by Go (goxio_sysmon_guard, under udpcall's lock, before the
 * monitor becomes idle and after it is normal again) and read by whichever thread calls
 * pthread_create. The attr the runtime passes is its own local (gcc_linux_amd64.c): the wrapper
 * changes its scheduling fields for the call and restores them before returning.
 */
#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SCHED_IDLE
#define SCHED_IDLE 5
#endif

int __real_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static volatile int quiet_tid;  /* the monitor's thread id while it is idle, else 0 */
static int quiet_policy;        /* its policy before (SCHED_OTHER, SCHED_FIFO, ...) */
static int quiet_priority;      /* its static priority before (0 unless real-time) */
static long quiet_slack;        /* its timer slack before, in ns (0: unknown, leave children's) */
static volatile long n_guarded; /* threads the idle monitor started with its former class */
static volatile long n_idle;    /* ... that had to inherit the idle class (EPERM) */

/* goxio_sysmon_guard publishes the monitor's thread id and former class (tid 0: none is idle). */
GOXIO_HIDDEN void goxio_sysmon_guard(int tid, int policy, int priority, long slack) {
	if (tid != 0) {
		quiet_policy = policy;
		quiet_priority = priority;
		quiet_slack = slack;
	}
	__atomic_store_n(&quiet_tid, tid, __ATOMIC_RELEASE);
}

/* goxio_sysmon_started reports how many threads the idle monitor started, and how many of them
 * inherited its class. */
GOXIO_HIDDEN void goxio_sysmon_started(long *guarded, long *idle) {
	*guarded = __atomic_load_n(&n_guarded, __ATOMIC_RELAXED);
	*idle = __atomic_load_n(&n_idle, __ATOMIC_RELAXED);
}

/* sched_attr as sched_setattr(2) takes it (glibc 2.36 has no wrapper). */
struct goxio_sched_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

struct probe {
	int policy, priority, nice;
	int err;
};

static void *probe_main(void *arg) {
	struct probe *p = arg;
	struct goxio_sched_attr a = {.size = sizeof a, .policy = SCHED_IDLE, .nice = p->nice};
	if (syscall(SYS_sched_setattr, 0, &a, 0) != 0) {
		p->err = errno;
		return NULL;
	}
	a.policy = (uint32_t)p->policy;
	a.priority = (uint32_t)p->priority;
	p->err = syscall(SYS_sched_setattr, 0, &a, 0) == 0 ? 0 : errno;
	return NULL;
}

/* goxio_sysmon_probe returns 0 when a thread of this process may go from SCHED_IDLE back to
 * policy/priority/nice (the monitor's class), else the errno that forbids it. The probe thread
 * is started here, not by the monitor, and ends before the call returns. */
GOXIO_HIDDEN int goxio_sysmon_probe(int policy, int priority, int nice) {
	struct probe p = {.policy = policy, .priority = priority, .nice = nice};
	pthread_attr_t attr;
	pthread_t t;
	if (pthread_attr_init(&attr) != 0)
		return EAGAIN;
	pthread_attr_setstacksize(&attr, 64 << 10);
	int rc = __real_pthread_create(&t, &attr, probe_main, &p);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return rc;
	pthread_join(t, NULL);
	return p.err;
}

/* A thread the quiet monitor starts runs start() first: the monitor's former timer slack, then
 * the runtime's start routine. */
struct start {
	void *(*fn)(void *);
	void *arg;
	long slack;
};

static void *start(void *p) {
	struct start s = *(struct start *)p;
	free(p);
	prctl(PR_SET_TIMERSLACK, (unsigned long)s.slack, 0, 0, 0);
	return s.fn(s.arg);
}

GOXIO_HIDDEN int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *cattr, void *(*fn)(void *), void *arg) {
	int tid = __atomic_load_n(&quiet_tid, __ATOMIC_ACQUIRE);
	if (GOXIO_LIKELY(tid == 0) || (pid_t)syscall(SYS_gettid) != tid)
		return __real_pthread_create(thread, cattr, fn, arg);

	pthread_attr_t local, *attr = (pthread_attr_t *)cattr; /* the caller's own, see above */
	if (attr == NULL) {
		if (pthread_attr_init(&local) != 0)
			return __real_pthread_create(thread, cattr, fn, arg);
		attr = &local;
	}
	int inherit = PTHREAD_INHERIT_SCHED, policy = SCHED_OTHER;
	struct sched_param param = {0}, want = {.sched_priority = quiet_priority};
	pthread_attr_getinheritsched(attr, &inherit);
	pthread_attr_getschedpolicy(attr, &policy);
	pthread_attr_getschedparam(attr, &param);
	struct start *st = NULL;
	if (quiet_slack > 0 && (st = malloc(sizeof *st)) != NULL) {
		*st = (struct start){.fn = fn, .arg = arg, .slack = quiet_slack};
		fn = start;
		arg = st;
	}
	int rc = EINVAL;
	if (pthread_attr_setinheritsched(attr, PTHREAD_EXPLICIT_SCHED) == 0 &&
	    pthread_attr_setschedpolicy(attr, quiet_policy) == 0 && pthread_attr_setschedparam(attr, &want) == 0)
		rc = __real_pthread_create(thread, attr, fn, arg);
	pthread_attr_setinheritsched(attr, inherit);
	pthread_attr_setschedpolicy(attr, policy);
	pthread_attr_setschedparam(attr, &param);
	if (rc == 0) {
		__atomic_add_fetch(&n_guarded, 1, __ATOMIC_RELAXED);
	} else if (rc == EPERM || rc == EINVAL) {
		rc = __real_pthread_create(thread, attr, fn, arg);
		if (rc == 0)
			__atomic_add_fetch(&n_idle, 1, __ATOMIC_RELAXED);
	}
	if (rc != 0)
		free(st);
	if (attr == &local)
		pthread_attr_destroy(&local);
	return rc;
}

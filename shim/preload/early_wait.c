/*
 * early_wait.c: a blocking receive of a UDP socket in its early phase polls before it sleeps.
 *
 * A UDP socket in its early phase (early.c) sends to a goxio receiver through the kernel and takes
 * the answer from the kernel socket. The goxio server's engine spins on its CPU for its next
 * request (VMA_RX_POLL), so its answer reaches this thread on the other CPU, asleep: on this 2-CPU
 * VM the wake-up of an idle CPU costs ~40 us, and a socket per request (socket, sendto, recv,
 * close) took 50-60 us a round against the kernel's 25 us when both ends shared a CPU (2.3x the
 * kernel's p50 unpinned). Polling, the round is ~25 us on two CPUs.
 *
 * So such a receive polls the kernel socket (poll with no timeout, sched_yield in between, which
 * lets a peer sharing this CPU answer) for up to EARLY_SPIN_NS before the blocking call, as the
 * engine's receives poll before they sleep, when:
 *   - receive polling is on: VMA_RX_POLL is not 0 (the environment's VMA_RX_POLL or VMA_SPEC
 *     profile before the engine loads, the engine's parameters once it has: goxio_early_spin);
 *   - the call blocks: no MSG_DONTWAIT, and the socket is not O_NONBLOCK (one fcntl);
 *   - the thread may run on more than one CPU (its affinity, read at most every AFFINITY_NS): a
 *     thread pinned to one CPU would only keep the peer that answers from it.
 * The blocking call then finds the datagram, or waits as before (another thread took it).
 *
 * Signals: a program's handler that ran while it polled (signal.c's per-thread counters) ends the
 * call with EINTR where the kernel's blocking receive would have: a handler without SA_RESTART,
 * or any handler when the socket has SO_RCVTIMEO (the kernel does not restart a socket wait with
 * a timeout: sock_intr_errno). A handler with SA_RESTART on a socket without a timeout lets the
 * blocking call go on, as the kernel restarts it. SO_RCVTIMEO's wait grows by at most
 * EARLY_SPIN_NS, less than the kernel's own rounding of it to jiffies.
 */
#include "preload.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EARLY_SPIN_NS 50000ull	  /* polling budget of one receive */
#define AFFINITY_NS 100000000ull /* a thread's affinity is read again after 100 ms */

/* early_spin_on: 1 polling, 0 not, -1 not decided yet (the environment decides at first use). */
static volatile int early_spin_on = -1;

void goxio_early_spin(int on) { __atomic_store_n(&early_spin_on, on ? 1 : 0, __ATOMIC_RELEASE); }

/* env_rx_poll_off reports whether the environment turns receive polling off as conf would see it:
 * VMA_RX_POLL=0, or without it a VMA_SPEC profile that sets it to 0 (conf/params_spec.go:
 * 29west, wombat_fh, mcd-irq and their numbers; conf's TestEarlyWaitSpecs keeps the list in sync).
 * A parameters file (GOXIO_PARAMS_FILE) is read by the engine only: until it loads, such a process
 * polls. */
static int env_rx_poll_off(void) {
	const char *v = getenv("VMA_RX_POLL");
	if (v != NULL && v[0] != 0) {
		char *end;
		long x = strtol(v, &end, 0);
		return end != v && x == 0;
	}
	const char *s = getenv("VMA_SPEC");
	if (s == NULL)
		return 0;
	static const char *const off[] = {"29west", "29", "wombat_fh", "554", "mcd-irq", "624"};
	for (size_t k = 0; k < sizeof off / sizeof off[0]; k++)
		if (strcasecmp(s, off[k]) == 0)
			return 1;
	return 0;
}

/* spin_on: receive polling is on; the environment decides while the engine has not
 * (goxio_early_spin wins a race with that first decision: the failed exchange loads its value). */
static int spin_on(void) {
	int on = __atomic_load_n(&early_spin_on, __ATOMIC_ACQUIRE);
	if (on < 0) {
		int env = !env_rx_poll_off();
		if (__atomic_compare_exchange_n(&early_spin_on, &on, env, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			on = env;
	}
	return on;
}

/* many_cpus reports whether this thread may run on more than one CPU (cached per thread). */
static int many_cpus(void) {
	static __thread __attribute__((tls_model("initial-exec"))) uint64_t read_at;
	static __thread __attribute__((tls_model("initial-exec"))) int many;
	uint64_t now = goxio_clock_ns(CLOCK_MONOTONIC_COARSE);
	if (read_at == 0 || now - read_at > AFFINITY_NS) {
		cpu_set_t set;
		CPU_ZERO(&set);
		many = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 1;
		read_at = now != 0 ? now : 1;
	}
	return many;
}

/* timed reports whether fd has a receive timeout (SO_RCVTIMEO). */
static int timed(int fd) {
	struct timeval tv = {0, 0};
	socklen_t len = sizeof tv;
	return REAL(getsockopt)(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) == 0 && (tv.tv_sec != 0 || tv.tv_usec != 0);
}

int goxio_early_wait(int fd, int rflags) {
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 0);
	if (i == NULL || !(__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & GOXIO_LAZY_EARLY_UDP) || (rflags & MSG_DONTWAIT) ||
	    !spin_on() || !many_cpus())
		return 0;
	/* The signal counters before the first system call of the wait: a handler that runs at the
	 * return of fcntl or poll reached the call. (One that ran before, at the affinity's read
	 * every AFFINITY_NS, is one that came before the call, as one that comes in the program's
	 * code just before the kernel's receive.) */
	struct goxio_sig_counters *sc = goxio_sig_counters();
	unsigned all = __atomic_load_n(&sc->all, __ATOMIC_RELAXED);
	unsigned intr = __atomic_load_n(&sc->interrupting, __ATOMIC_RELAXED);
	int saved = errno, found = 0;
	int fl = REAL(fcntl)(fd, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK)) {
		errno = saved;
		return 0; /* no wait to interrupt */
	}
	uint64_t end = goxio_clock_ns(CLOCK_MONOTONIC) + EARLY_SPIN_NS;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = REAL(poll)(&p, 1, 0);
		if (n > 0 || (n < 0 && errno != EINTR)) {
			found = n > 0; /* a datagram or an error, which the call returns at once */
			break;         /* (or poll's own failure: the call says) */
		}
		if (__atomic_load_n(&sc->all, __ATOMIC_RELAXED) != all)
			break;
		if (goxio_clock_ns(CLOCK_MONOTONIC) >= end)
			break;
		sched_yield();
	}
	/* A handler that ran since the call began, with nothing to return yet, ends it where the
	 * kernel's wait would have been interrupted; one with SA_RESTART on a socket without a
	 * timeout lets it go on. */
	if (!found && __atomic_load_n(&sc->all, __ATOMIC_RELAXED) != all &&
	    (__atomic_load_n(&sc->interrupting, __ATOMIC_RELAXED) != intr || timed(fd))) {
		errno = EINTR;
		return -1;
	}
	errno = saved;
	return 0;
}

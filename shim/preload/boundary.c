/*
 * boundary.c: the one place where results cross from Go back to C.
 *
 * The engine returns a non-negative result or -errno. -(GOXIO_ERR_SIGPIPE + EPIPE) means EPIPE
 * from a call for which the kernel raised SIGPIPE (no MSG_NOSIGNAL). The kernel raised it while Go
 * code ran: a handler of the program's ran then, as it would have; but while the disposition is
 * still the Go runtime's own handler (the program's default), the runtime swallows the signal.
 * Then it is raised again here, in C, on the calling thread, before the call returns, so the
 * default action (or a later-unblocked pending signal) happens as without the library.
 */
#include "preload.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#define GOXIO_ERR_SIGPIPE 0x10000
/* GOXIO_ERR_RESTART: the engine's transport.ErrRestart, a wait interrupted by handlers deferred
 * until the call is back in C (signal.c) that the kernel would restart. */
#define GOXIO_ERR_RESTART 0x20000

static void sigpipe_again(void) {
	struct sigaction cur;
	if (REAL(sigaction)(SIGPIPE, NULL, &cur) != 0)
		return;
	uintptr_t h = (cur.sa_flags & SA_SIGINFO) ? (uintptr_t)cur.sa_sigaction : (uintptr_t)cur.sa_handler;
	if (goxio_in_engine(h) && !goxio_is_sig_tramp(h))
		pthread_kill(pthread_self(), SIGPIPE);
}


/*
 * Threads that ever called into the engine, counted at each thread's first call (threads that
 * ended stay counted: a thread that ends in C may leave its P held until the runtime takes it
 * back). The second thread tells Go (goxio_go_threads, threads.go), which gives the runtime its
 * Ps (procs.go). When the count first exceeds goxio_quiet_threads (set by Go before the engine
 * is ready: half those Ps), the thread that passed it tells Go, which gives the runtime's
 * monitor thread back its normal priority; it can still find a free P, as half of them are not
 * held by program threads.
 */
int goxio_quiet_threads = INT_MAX;
static atomic_int threads_seen;
static __thread __attribute__((tls_model("initial-exec"))) char thread_seen;

static __attribute__((noinline)) void count_thread(void) {
	thread_seen = 1;
	int n = atomic_fetch_add_explicit(&threads_seen, 1, memory_order_relaxed) + 1;
	if (n == 2 || n == goxio_quiet_threads + 1)
		goxio_eng.threads(n);
}

/* engine_calls counts this thread's calls into the engine (goxio_thread_engine_calls). */
static __thread __attribute__((tls_model("initial-exec"))) unsigned long engine_calls;

unsigned long goxio_thread_engine_calls(void) { return engine_calls; }

/* call_result turns the engine's result into the call's: r >= 0 keeps errno (saved), -errno is
 * -1 with errno, an EPIPE the runtime swallowed raises SIGPIPE again. */
static inline long call_result(long r, int saved) {
	if (GOXIO_LIKELY(r >= 0)) {
		errno = saved;
		return r;
	}
	if (r == -(GOXIO_ERR_SIGPIPE + EPIPE)) {
		sigpipe_again();
		errno = EPIPE;
		return -1;
	}
	errno = (int)-r;
	return -1;
}

long goxio_call(int op, int fd, uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4) {
	int saved = errno;
	long r;
	do {
		if (GOXIO_UNLIKELY(!thread_seen)) {
			GOXIO_ENTER(count_thread(); engine_calls++; r = goxio_eng.call(op, fd, a0, a1, a2, a3, a4));
		} else {
			engine_calls++;
			GOXIO_GO(r = goxio_eng.call(op, fd, a0, a1, a2, a3, a4));
		}
		/* Deferred handlers interrupted a wait the kernel restarts (SA_RESTART): they ran
		 * (GOXIO_GO), the call is made again. */
	} while (GOXIO_UNLIKELY(r == -GOXIO_ERR_RESTART));
	return call_result(r, saved);
}

/*
 * signal.c: sigaction and signal wrappers, pure C (the Go runtime calls sigaction itself while it
 * starts, before Go code can run, and a signal handler must never wait for Go).
 *
 * - A program's handler gets SA_ONSTACK added, because it may run on a thread that is executing
 *   Go code and Go requires alternate signal stacks there.
 * - A handler inside this library is the Go runtime's own: seeing one tells goxio_late that the
 *   runtime's constructor ran (see lifecycle.c).
 */
#include "goxio.h"

#include <string.h>

extern volatile int goxio_runtime_ctor_ran;
extern uintptr_t goxio_self_lo, goxio_self_hi;

static int is_function(const struct sigaction *act) {
	uintptr_t h = (act->sa_flags & SA_SIGINFO) ? (uintptr_t)act->sa_sigaction : (uintptr_t)act->sa_handler;
	return h != (uintptr_t)SIG_DFL && h != (uintptr_t)SIG_IGN && h != (uintptr_t)SIG_ERR;
}

static int in_self(const struct sigaction *act) {
	uintptr_t h = (act->sa_flags & SA_SIGINFO) ? (uintptr_t)act->sa_sigaction : (uintptr_t)act->sa_handler;
	return h >= goxio_self_lo && h < goxio_self_hi;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
	if (act == NULL || !is_function(act))
		return REAL(sigaction)(sig, act, old);
	if (in_self(act)) {
		goxio_runtime_ctor_ran = 1;
		return REAL(sigaction)(sig, act, old);
	}
	if (act->sa_flags & SA_ONSTACK)
		return REAL(sigaction)(sig, act, old);
	struct sigaction copy;
	memcpy(&copy, act, sizeof(copy));
	copy.sa_flags |= SA_ONSTACK;
	return REAL(sigaction)(sig, &copy, old);
}

/* signal has glibc's BSD semantics (SA_RESTART, the signal blocked in its handler), expressed
 * through sigaction so that SA_ONSTACK is added the same way. */
sighandler_t signal(int sig, sighandler_t handler) {
	struct sigaction act, old;
	if (sig <= 0 || sig >= NSIG || handler == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, sig);
	act.sa_flags = SA_RESTART;
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* goxio_block_async_signals blocks every signal but the synchronous ones (faults the thread
 * itself causes), so that threads created while it is in force never take the program's
 * asynchronous signals (golang/go#55066). */
void goxio_block_async_signals(void) {
	sigset_t set;
	sigfillset(&set);
	sigdelset(&set, SIGSEGV);
	sigdelset(&set, SIGBUS);
	sigdelset(&set, SIGFPE);
	sigdelset(&set, SIGILL);
	sigdelset(&set, SIGTRAP);
	sigdelset(&set, SIGABRT);
	sigdelset(&set, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

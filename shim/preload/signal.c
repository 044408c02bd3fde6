/*
 * signal.c: sigaction and signal wrappers, pure C (the Go runtime calls sigaction itself while it
 * starts, before Go code can run, and a signal handler must never wait for Go).
 *
 * - A program's handler gets SA_ONSTACK added, because it may run on a thread that is executing
 *   Go code and Go requires alternate signal stacks there; one the program did not ask to run
 *   there runs where the kernel would have run it (altstack.c: goxio_sig_off_altstack), and
 *   sigaction reports the program's own flags.
 * - The engine's Go runtime installs its handlers when it loads (loader.c), through this
 *   wrapper: its calls (made from the engine's code) go to the kernel unchanged. Where it
 *   replaced a handler of the program's (it forwards to it), sigaction still reports the
 *   program's.
 * - In a vfork child (which shares the parent's memory) handlers go to the kernel unchanged and
 *   the records below are only read.
 * - A program's handler is installed behind goxio_sig_tramp, which counts, per thread, the
 *   handlers that ran (and those without SA_RESTART) before calling the program's handler: a
 *   receive or a select/poll/epoll that polls rings in user space has no system call for the
 *   signal to interrupt, so it watches the counters to return EINTR as the kernel would
 *   (goxio_sig_counters). sigaction reports the program's own handler, never the trampoline.
 */
#include "preload.h"

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ucontext.h>


static int is_function(const struct sigaction *act) {
	uintptr_t h = (act->sa_flags & SA_SIGINFO) ? (uintptr_t)act->sa_sigaction : (uintptr_t)act->sa_handler;
	return h != (uintptr_t)SIG_DFL && h != (uintptr_t)SIG_IGN && h != (uintptr_t)SIG_ERR;
}

static uintptr_t handler_of(const struct sigaction *act) {
	return (act->sa_flags & SA_SIGINFO) ? (uintptr_t)act->sa_sigaction : (uintptr_t)act->sa_handler;
}

/* The program's handlers behind the trampoline, by signal number. */
GOXIO_COLD static struct sigaction app_act[NSIG];
static volatile int app_set[NSIG];

__thread __attribute__((tls_model("initial-exec"))) struct goxio_sig_counters goxio_sig_tls;
__thread __attribute__((tls_model("initial-exec"))) int goxio_sig_depth;
__thread __attribute__((tls_model("initial-exec"))) int goxio_sig_defer;
__thread __attribute__((tls_model("initial-exec"))) int goxio_sig_deferred_n;

/* Signals deferred on this thread while it ran the engine's code, oldest first. */
#define DEFER_MAX 32
static __thread struct {
	int sig;
	siginfo_t info;
} deferred[DEFER_MAX];

struct goxio_sig_counters *goxio_sig_counters(void) { return &goxio_sig_tls; }

/* handler_frame[d]: the frame the handler at depth d was called from (run_app's); the handler's
 * own frames lie below it. */
#define HANDLER_FRAMES 16
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t handler_frame[HANDLER_FRAMES];

/* run_app runs the program's handler for sig on this thread. Signals deferred while it ran
 * (its calls into the engine) run after it, as the kernel would deliver them once its mask is
 * lifted. */
static void run_app(int sig, siginfo_t *info, void *ctx) {
	const struct sigaction *a = &app_act[sig];
	if (goxio_sig_depth < HANDLER_FRAMES)
		handler_frame[goxio_sig_depth] = (uintptr_t)__builtin_frame_address(0);
	goxio_sig_depth++;
	if (a->sa_flags & SA_SIGINFO)
		a->sa_sigaction(sig, info, ctx);
	else if (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN)
		a->sa_handler(sig);
	goxio_sig_depth--;
	goxio_sig_flush();
}

struct app_call {
	int sig;
	siginfo_t *info;
	void *ctx;
};

static void run_app_call(void *p) {
	struct app_call *c = p;
	run_app(c->sig, c->info, c->ctx);
}

void goxio_sig_keep_mask(sigset_t *old) { pthread_sigmask(SIG_SETMASK, NULL, old); }

void goxio_sig_put_mask(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

/* fault_signal reports a signal the kernel sends for the instruction the thread executes (the Go
 * runtime's own business inside the engine's code): never deferred. */
static int fault_signal(int sig) {
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP || sig == SIGSYS;
}

void goxio_sig_tramp(int sig, siginfo_t *info, void *ctx) {
	__atomic_add_fetch(&goxio_sig_tls.all, 1, __ATOMIC_RELAXED);
	if (sig <= 0 || sig >= NSIG || !app_set[sig])
		return;
	const struct sigaction *a = &app_act[sig];
	if (!(a->sa_flags & SA_RESTART))
		__atomic_add_fetch(&goxio_sig_tls.interrupting, 1, __ATOMIC_RELAXED);
	if (goxio_sig_defer > 0 && !fault_signal(sig)) {
		/* Inside the engine or a lock it takes: the handler runs when the thread is out
		 * (goxio_sig_undefer), and a wait of the engine ends for it
		 * (transport.SigCounters.Deferred). Meanwhile the signal is as if blocked: a standard
		 * signal already waiting is not queued twice, as the kernel keeps one pending. */
		int n = goxio_sig_deferred_n;
		for (int i = 0; i < n; i++)
			if (deferred[i].sig == sig && sig < SIGRTMIN)
				return;
		if (n == DEFER_MAX)
			return; /* a real-time signal beyond the queue: lost (running it here could not be safe) */
		deferred[n].sig = sig;
		if (info != NULL)
			deferred[n].info = *info;
		else
			memset(&deferred[n].info, 0, sizeof deferred[n].info);
		goxio_sig_deferred_n = n + 1;
		__atomic_add_fetch(&goxio_sig_tls.deferred, 1, __ATOMIC_RELAXED);
		/* The engine may be between its wait's last look and its sleep: the sleep's timeout
		 * is read from here (wait.Call.Arm), so it returns at once and the wait ends. */
		__atomic_store_n(&goxio_sig_tls.wake_sec, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&goxio_sig_tls.wake_nsec, 0, __ATOMIC_RELAXED);
		return;
	}
	if ((a->sa_flags & SA_ONSTACK) || fault_signal(sig)) {
		run_app(sig, info, ctx);
		return;
	}
	/* Where the kernel would run it without the library's SA_ONSTACK (altstack.c). */
	struct app_call c = {sig, info, ctx};
	goxio_sig_off_altstack(run_app_call, &c, ctx);
}

void goxio_sig_run_deferred(void) {
	int saved = errno;
	while (goxio_sig_deferred_n > 0) {
		int sig = deferred[0].sig;
		siginfo_t info = deferred[0].info;
		for (int i = 1; i < goxio_sig_deferred_n; i++)
			deferred[i - 1] = deferred[i];
		goxio_sig_deferred_n--;
		if (!app_set[sig])
			continue;
		/* As the kernel runs a handler: its mask (and the signal itself, unless SA_NODEFER)
		 * blocked meanwhile, and a context to read, this thread's now. */
		const struct sigaction *a = &app_act[sig];
		sigset_t mask = a->sa_mask, old;
		if (!(a->sa_flags & SA_NODEFER))
			sigaddset(&mask, sig);
		pthread_sigmask(SIG_BLOCK, &mask, &old);
		ucontext_t uc;
		getcontext(&uc);
		run_app(sig, &info, &uc);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	errno = saved;
}

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000 /* the kernel's; glibc sets it with its own restorer on x86-64 */
#endif

/* report_app writes into old, the kernel's record of the trampoline, the program's handler app as
 * the kernel would report it had the program installed it: its flags (without the SA_ONSTACK and
 * SA_SIGINFO the library adds) and the restorer libc gave the record. */
static void report_app(struct sigaction *old, const struct sigaction *app) {
	int restorer = old->sa_flags & SA_RESTORER;
	void (*fn)(void) = old->sa_restorer;
	memcpy(old, app, sizeof(*old));
	if (restorer) {
		old->sa_flags |= SA_RESTORER;
		old->sa_restorer = fn;
	}
}

/* app_view turns what the kernel holds into what the program installed. */
static void app_view(int sig, struct sigaction *old) {
	if (old == NULL || sig <= 0 || sig >= NSIG)
		return;
	if (!app_set[sig])
		return;
	if (((old->sa_flags & SA_SIGINFO) && old->sa_sigaction == goxio_sig_tramp) || goxio_in_engine(handler_of(old)))
		report_app(old, &app_act[sig]);
}

int goxio_is_sig_tramp(uintptr_t h) { return h == (uintptr_t)goxio_sig_tramp; }

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
	int r;
	if (goxio_in_vfork()) {
		/* A vfork child has its own dispositions but its parent's memory: its handlers go to
		 * the kernel as they are, and the records of the parent's stay untouched. A handler
		 * the parent installed behind the trampoline is still reported as the program's. */
		r = REAL(sigaction)(sig, act, old);
		if (r == 0)
			app_view(sig, old);
		return r;
	}
	if (GOXIO_UNLIKELY(goxio_in_engine((uintptr_t)__builtin_return_address(0))))
		return REAL(sigaction)(sig, act, old); /* the engine's Go runtime */
	if (act == NULL || !is_function(act)) {
		r = REAL(sigaction)(sig, act, old);
		if (r == 0) {
			app_view(sig, old);
			if (act != NULL && sig > 0 && sig < NSIG)
				app_set[sig] = 0;
		}
		return r;
	}
	if (goxio_in_engine(handler_of(act)))
		return REAL(sigaction)(sig, act, old);
	if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP)
		return REAL(sigaction)(sig, act, old);
	goxio_real_init(); /* the handler may interrupt dlsym: no first use in it (real.c) */
	struct sigaction prev_app;
	int had = app_set[sig];
	if (had)
		memcpy(&prev_app, &app_act[sig], sizeof(prev_app));
	struct sigaction copy;
	memcpy(&copy, act, sizeof(copy));
	copy.sa_flags |= SA_ONSTACK | SA_SIGINFO;
	copy.sa_sigaction = goxio_sig_tramp;
	/* Publish the program's handler before the kernel can call the trampoline for it. */
	memcpy(&app_act[sig], act, sizeof(*act));
	__atomic_store_n(&app_set[sig], 1, __ATOMIC_RELEASE);
	r = REAL(sigaction)(sig, &copy, old);
	if (r != 0) {
		if (had)
			memcpy(&app_act[sig], &prev_app, sizeof(prev_app));
		else
			app_set[sig] = 0;
		return r;
	}
	if (old != NULL && had && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction == goxio_sig_tramp)
		report_app(old, &prev_app);
	return 0;
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

/*
 * Jumps out of a handler.
 *
 * A program may leave its handler with siglongjmp (or longjmp) instead of returning: the classic
 * timeout around a blocking call (alarm, then siglongjmp back to the sigsetjmp before the call).
 * The kernel keeps no state for a running handler; the library does (goxio_sig_depth, by which it
 * runs deferred handlers only once no handler runs, and keeps the mask across engine calls), and a
 * handler that never returned left it raised for good: every later handler that came while the
 * thread was in the engine was deferred and never ran (the second timeout of such a program never
 * fired; its receive returned EINTR instead, tests/semantic/sigjump.c). So the jumps are
 * interposed: a jump to a buffer that does not lie in a handler's own frames (set up before the
 * handler ran: in the interrupted code's frames, or in static or heap memory) leaves that handler,
 * and every handler it ran inside of while the same holds; one set up inside the handler stays in
 * it. A handler run off the alternate stack gets the whole stack back (altstack.c).
 */
/* requeue_deferred gives the handlers still deferred on the thread back to the kernel, as pending
 * signals of the thread with their information: the jump skips the flush that would have run them,
 * and the kernel delivers them once the jump has put the program's mask back, as it would have
 * after the handler without the library. */
static void requeue_deferred(void) {
	int n = goxio_sig_deferred_n;
	goxio_sig_deferred_n = 0;
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < n; i++)
		syscall(SYS_rt_tgsigqueueinfo, pid, tid, deferred[i].sig, &deferred[i].info);
}

static void sig_jump(const void *env) {
	uintptr_t e = (uintptr_t)env, here = (uintptr_t)__builtin_frame_address(0);
	while (goxio_sig_depth > 0) {
		int d = goxio_sig_depth - 1;
		if (d < HANDLER_FRAMES && e >= here && e < handler_frame[d])
			return; /* the buffer lies in this handler's frames: the jump stays in it */
		goxio_sig_depth = d;
		if (d == 0) {
			goxio_altstack_whole();
			requeue_deferred();
		}
	}
}

/* JUMP is the body of the interposed jumps: the handlers it leaves, then libc's jump. */
#define JUMP(name, env, val)                                                                               \
	do {                                                                                               \
		if (GOXIO_UNLIKELY(goxio_sig_depth != 0))                                                  \
			sig_jump(env);                                                                     \
		REAL(name)(env, val);                                                                      \
	} while (0)

void siglongjmp(sigjmp_buf env, int val) { JUMP(siglongjmp, env, val); }

void longjmp(jmp_buf env, int val) { JUMP(longjmp, env, val); }

void _longjmp(jmp_buf env, int val) { JUMP(_longjmp, env, val); }

void __longjmp_chk(struct __jmp_buf_tag env[1], int val) __attribute__((noreturn));
void __longjmp_chk(struct __jmp_buf_tag env[1], int val) { JUMP(__longjmp_chk, env, val); }

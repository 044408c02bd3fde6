/*
 * altstack.c: the alternate signal stack of a thread that has called into the engine.
 *
 * The Go runtime runs its signal handlers (all of them: it forwards the program's) on the
 * thread's alternate signal stack. A program thread that calls into the engine keeps a Go M, and
 * the runtime takes the alternate stack it finds at that first call as the thread's own, or
 * installs one when there is none. A program that disables its alternate stack afterwards leaves
 * the runtime without one, and the next signal that arrives while the thread runs Go code (the
 * runtime's own preemption signal, SIGURG, during a collection) kills the process: "non-Go code
 * disabled sigaltstack". CPython's faulthandler does exactly that at exit (it restores the "none"
 * it found when it installed its stack, after the engine's first call on the main thread).
 *
 * So, on a thread that has called into the engine, a request to disable the alternate stack
 * installs the runtime's own again (the one it installed at the thread's first call, when the
 * thread had none) or else the library's (one per such thread, made at the first need and kept
 * for its life), and the program sees what it asked for: while one of those two is installed,
 * its queries report the stack disabled, as they would without the library. Threads that never called into the engine get the kernel's call
 * unchanged. The system call is made directly (glibc's sigaltstack is the bare system call), so
 * the real-function table does not grow.
 */
#include "preload.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ALT_SIZE: the library's stack, as large as the Go runtime's own signal stacks. */
#define ALT_SIZE (64 * 1024)

/* alt_go: the stack the Go runtime installed at this thread's first call into the engine (the
 * thread had none); alt_mine: the library's, made when the program disabled its stack and the
 * runtime had none of its own to take back. Both are the program's "disabled". */
static __thread __attribute__((tls_model("initial-exec"))) void *alt_go;
static __thread __attribute__((tls_model("initial-exec"))) size_t alt_go_size;
static __thread __attribute__((tls_model("initial-exec"))) void *alt_mine;
/* alt_entered: the thread has called into the engine (it has a Go M). */
static __thread __attribute__((tls_model("initial-exec"))) char alt_entered;

static int raw_sigaltstack(const stack_t *ss, stack_t *old) { return (int)syscall(SYS_sigaltstack, ss, old); }

/* altstack_none reports whether the thread has no alternate signal stack. */
static int altstack_none(void) {
	stack_t st;
	return raw_sigaltstack(NULL, &st) == 0 && (st.ss_flags & SS_DISABLE);
}

int goxio_altstack_begin(void) { return GOXIO_LIKELY(alt_entered) ? -1 : altstack_none(); }

void goxio_altstack_end(int before) {
	stack_t st;
	if (GOXIO_LIKELY(before < 0))
		return;
	alt_entered = 1;
	if (before && raw_sigaltstack(NULL, &st) == 0 && !(st.ss_flags & SS_DISABLE)) {
		alt_go = st.ss_sp;
		alt_go_size = st.ss_size;
	}
}

/* library_stack reports whether st is the runtime's or the library's stack. */
static int library_stack(const stack_t *st) {
	return !(st->ss_flags & SS_DISABLE) && st->ss_sp != NULL && (st->ss_sp == alt_go || st->ss_sp == alt_mine);
}

/* install_library_stack gives the thread the runtime's stack back, or the library's. */
static void install_library_stack(void) {
	stack_t st = {.ss_sp = alt_go, .ss_flags = 0, .ss_size = alt_go_size};
	if (alt_go == NULL) {
		if (alt_mine == NULL) {
			void *p = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			alt_mine = p == MAP_FAILED ? NULL : p;
		}
		st.ss_sp = alt_mine;
		st.ss_size = ALT_SIZE;
	}
	if (st.ss_sp != NULL)
		raw_sigaltstack(&st, NULL);
}

int sigaltstack(const stack_t *ss, stack_t *old) {
	if (GOXIO_LIKELY(!alt_entered))
		return raw_sigaltstack(ss, old);
	/* The kernel checks the pointers and the request (EFAULT, EINVAL, ENOMEM, EPERM). */
	stack_t cur;
	if (raw_sigaltstack(NULL, &cur) != 0 || (old != NULL && raw_sigaltstack(NULL, old) != 0))
		return -1;
	if (ss != NULL) {
		if (raw_sigaltstack(ss, NULL) != 0)
			return -1;
		if (altstack_none())
			install_library_stack(); /* the program's "disabled" */
	}
	if (old != NULL && library_stack(&cur)) {
		old->ss_sp = NULL;
		old->ss_size = 0;
		old->ss_flags = SS_DISABLE;
	} else if (old != NULL) {
		*old = cur;
	}
	return 0;
}

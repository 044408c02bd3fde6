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
#include <ucontext.h>
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

/*
 * A program's handler off the alternate stack.
 *
 * The library installs every handler of the program with SA_ONSTACK (signal.c: the signal may
 * come while the thread runs Go code), so the kernel runs it on the thread's alternate stack, the
 * Go runtime's signal stack once the thread has called into the engine. A handler that calls into
 * the engine (a timer or SIGIO handler that receives from a ring socket) then runs Go code off
 * that stack, and a signal that comes meanwhile (the runtime's own preemption signal, or the
 * program's timer again) is delivered at the top of the alternate stack, since the thread is not
 * on it: over the frames of the handler still running there, the kernel's record of the
 * interrupted context among them. The process crashed (garbage return addresses in the runtime's
 * signal handler; tests/semantic/udp_sigrecv.c with a timer every 20 us: 7 runs of 15).
 *
 * So a handler the program did not ask to run on an alternate stack runs where the kernel would
 * have run it without SA_ONSTACK, on the interrupted stack (below its red zone), and meanwhile the
 * thread's alternate stack is the part of it below the frames in use, as the kernel's
 * SS_AUTODISARM would leave it free: a nested signal lands there, the runtime still finds its own
 * stack. The alternate stack is changed from the interrupted stack (the kernel refuses a change
 * on the stack it replaces), given back the same way, and the kernel's return from the signal
 * restores it too.
 */

/* ALT_KEEP: the bytes below the trampoline's frame left out of the shrunk alternate stack. */
#define ALT_KEEP 1024
/* RED_ZONE: the x86-64 ABI's area below the stack pointer that the interrupted code may use. */
#define RED_ZONE 128

#if defined(__x86_64__)
/* goxio_on_stack(top, fn, arg) calls fn(arg) with the stack pointer at top (16-byte aligned). */
__asm__(".text\n"
	".p2align 4\n"
	".type goxio_on_stack, @function\n"
	"goxio_on_stack:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	mov %rdi, %rsp\n"
	"	mov %rdx, %rdi\n"
	"	call *%rsi\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	ret\n"
	".size goxio_on_stack, .-goxio_on_stack\n");
void goxio_on_stack(uintptr_t top, void (*fn)(void *), void *arg) __attribute__((visibility("hidden")));

struct off_call {
	void (*fn)(void *);
	void *arg;
	stack_t whole; /* the alternate stack as the signal found it */
	stack_t lower; /* its part below the trampoline's frames */
};

/* alt_whole: the alternate stack the outermost handler run off it shrank (alt_shrunk), which a
 * jump out of the handler (signal.c) gives back. */
static __thread __attribute__((tls_model("initial-exec"))) stack_t alt_whole;
static __thread __attribute__((tls_model("initial-exec"))) char alt_shrunk;

static void off_run(void *p) {
	struct off_call *c = p;
	int moved = raw_sigaltstack(&c->lower, NULL) == 0, outer = moved && !alt_shrunk;
	if (outer) {
		alt_whole = c->whole;
		alt_shrunk = 1;
	}
	c->fn(c->arg);
	if (moved)
		raw_sigaltstack(&c->whole, NULL);
	if (outer)
		alt_shrunk = 0;
}

void goxio_altstack_whole(void) {
	if (alt_shrunk) {
		raw_sigaltstack(&alt_whole, NULL);
		alt_shrunk = 0;
	}
}

void goxio_sig_off_altstack(void (*fn)(void *), void *arg, const void *ctx) {
	stack_t cur;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (ctx == NULL || raw_sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_ONSTACK)) {
		fn(arg);
		return;
	}
	uintptr_t lo = (uintptr_t)cur.ss_sp, hi = lo + cur.ss_size;
	uintptr_t isp = (uintptr_t)((const ucontext_t *)ctx)->uc_mcontext.gregs[REG_RSP];
	if ((isp >= lo && isp <= hi) || here < lo + ALT_KEEP + 4096 || here > hi) {
		fn(arg); /* interrupted on the alternate stack itself, or too little of it left */
		return;
	}
	struct off_call c = {.fn = fn, .arg = arg, .whole = {.ss_sp = cur.ss_sp, .ss_size = cur.ss_size, .ss_flags = 0}};
	c.lower.ss_sp = cur.ss_sp;
	c.lower.ss_size = here - ALT_KEEP - lo;
	c.lower.ss_flags = 0;
	goxio_on_stack((isp - RED_ZONE - 64) & ~(uintptr_t)15, off_run, &c);
}
#else
void goxio_sig_off_altstack(void (*fn)(void *), void *arg, const void *ctx) {
	(void)ctx;
	fn(arg); /* elsewhere the handler stays on the alternate stack (no stack switch written) */
}

void goxio_altstack_whole(void) {}
#endif

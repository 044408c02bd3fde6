/*
 * stackbound.c: the thread stack bounds the engine's Go runtime asks for, kept per thread.
 *
 * A call into the engine from a program's thread is a cgo callback. Go records the thread's stack
 * bounds for it and asks for them again (x_cgo_getstackbound: pthread_getattr_np on the calling
 * thread) whenever a callback comes from outside the bounds it knows, or while they are only an
 * estimate: every engine call from a program's signal handler (which runs on the alternate signal
 * stack) and the first call after it. For the main thread glibc's pthread_getattr_np reads
 * /proc/self/maps and the stack rlimit each time (tens of microseconds), on other threads it
 * makes a sched_getaffinity system call and an allocation: a SIGIO-driven receiver whose handler
 * reads its socket spent nearly all its time there (tests/semantic/udp_sigrecv.c did not finish
 * in 30 s; it finishes in a fraction of a second on the kernel).
 *
 * A thread's own stack does not move: the first answer, per thread, is kept and given again to
 * the engine's later calls for the calling thread. Every other caller (the program, a call for
 * another thread, the engine while it loads) gets glibc's answer unchanged. The engine's reference
 * is versioned (pthread_getattr_np@GLIBC_2.32): libgoxio.map gives this definition that version,
 * or the dynamic linker would bind the engine to glibc's past it.
 */
#include "preload.h"

struct stack_bound {
	void *addr;
	size_t size;
};

static __thread __attribute__((tls_model("initial-exec"))) struct stack_bound own_stack;

int pthread_getattr_np(pthread_t th, pthread_attr_t *attr) {
	uintptr_t caller = (uintptr_t)__builtin_return_address(0);
	int mine = pthread_equal(th, pthread_self()) && goxio_in_engine_loaded(caller);
	if (mine && own_stack.addr != NULL) {
		/* The engine initialized attr (x_cgo_getstackbound) and only reads the stack back. */
		pthread_attr_init(attr);
		if (pthread_attr_setstack(attr, own_stack.addr, own_stack.size) == 0)
			return 0;
	}
	int r = REAL(pthread_getattr_np)(th, attr);
	if (r == 0 && mine) {
		void *addr;
		size_t size;
		if (pthread_attr_getstack(attr, &addr, &size) == 0 && addr != NULL && size != 0)
			own_stack = (struct stack_bound){addr, size};
	}
	return r;
}

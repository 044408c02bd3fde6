/*
 * vfork.c: vfork, a real one.
 *
 * Shells (dash runs every external command this way), CPython's subprocess and many daemons start
 * programs with vfork: the child borrows the parent's memory until it calls execve or _exit, and
 * the parent thread waits meanwhile, so no page table is copied and no page is faulted in
 * copy-on-write. Served with fork (page tables copied, pages faulted), a 200-command dash script
 * took ~19% more CPU under the library than without it; ~5% with this (most of it what any
 * preloaded library costs each exec).
 *
 * The wrapper is assembly because of the classic vfork problem: the child returns from the
 * wrapper first and goes on calling functions on the same stack, overwriting the wrapper's frame;
 * the parent then resumes inside the wrapper and must not return through anything the child may
 * have overwritten. So the wrapper keeps its return address in a register across the system call
 * (the kernel gives each task its own registers), as glibc's own vfork does, and makes its C calls
 * only where the stack is its own: goxio_vfork_prepare before the system call (what fork does
 * first: a load under way waited for, shared-memory sockets back to the kernel, lazy sockets noted
 * as shared), goxio_vfork_parent in the parent after it (the child is gone by then: it called
 * execve or _exit).
 *
 * The child runs on its parent thread's memory and TLS, so it sees goxio_vfork_depth non-zero
 * (raised just before the system call, lowered in the parent afterwards), and every call it makes
 * is pure passthrough (goxio_in_vfork, preload.h): the trampolines send it to the real function and
 * write nothing the parent reads. Its fd table and signal dispositions are its own (the kernel
 * copies both without CLONE_FILES and CLONE_SIGHAND), so its close, dup2, sigaction and socket go
 * to the kernel and change nothing of the parent's. A handler of the program's that runs on the
 * parent thread between the raise and the lowering is passthrough too; by then every socket is
 * with the kernel (goxio_prefork).
 *
 * With the engine loaded, the child is the same: it never enters Go (goxio_active is 0 in it) and
 * touches no engine state. The Go runtime's other threads keep running in the parent meanwhile, as
 * they do while any program thread runs C code; a signal handled by the runtime in the child sees
 * a thread in C code, which is the case the runtime handles for foreign threads. So the engine
 * does not change how vfork is served.
 *
 * Other architectures (aarch64 would keep the return address in x30, but there is no toolchain
 * here to test it): vfork is served by fork, the child (private memory) marked a vfork child as
 * well, so that it behaves the same: pure passthrough, never loads the engine.
 */
#include "preload.h"

#include <sys/syscall.h>
#include <unistd.h>

__thread __attribute__((tls_model("initial-exec"))) int goxio_vfork_depth;

/* goxio_vfork_prepare runs on the parent's stack before the system call. A vfork child that
 * vforks again only raises the depth (and lowers it when its own child is gone): it hands nothing
 * to the kernel (that was done before its own vfork) and writes no other state of its parent's. */
GOXIO_HIDDEN __attribute__((used)) void goxio_vfork_prepare(void) {
	int saved = errno;
	if (!goxio_in_vfork()) {
		goxio_prefork();
		goxio_lazy_fork(GOXIO_LAZY_FORKED);
	}
	goxio_vfork_depth++;
	errno = saved;
}

/* goxio_vfork_parent runs in the parent once the system call returned r (a pid, or -errno). */
GOXIO_HIDDEN __attribute__((used)) long goxio_vfork_parent(long r) {
	goxio_vfork_depth--;
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

#if defined(__x86_64__)

#define VFORK_STR_(x) #x
#define VFORK_STR(x) VFORK_STR_(x)

/* vfork: rsp is 8 mod 16 at entry, so each call below first moves it by 8. */
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	".p2align 4\n"
	"vfork:\n"
	".cfi_startproc\n"
#ifdef __CET__
	"endbr64\n"
#endif
	"subq $8, %rsp\n"
	".cfi_adjust_cfa_offset 8\n"
	"call goxio_vfork_prepare\n"
	"addq $8, %rsp\n"
	".cfi_adjust_cfa_offset -8\n"
	/* the return address goes into rdi, which the kernel keeps for both tasks */
	"popq %rdi\n"
	".cfi_adjust_cfa_offset -8\n"
	".cfi_register %rip, %rdi\n"
	"movl $" VFORK_STR(__NR_vfork) ", %eax\n"
	"syscall\n"
	"pushq %rdi\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %rip, 0\n"
	"testq %rax, %rax\n"
	"jz 1f\n"
	/* parent (or error): the stack below rsp is the parent's again */
	"movq %rax, %rdi\n"
	"subq $8, %rsp\n"
	".cfi_adjust_cfa_offset 8\n"
	"call goxio_vfork_parent\n"
	"addq $8, %rsp\n"
	".cfi_adjust_cfa_offset -8\n"
	"1:\n"
	/* child: back to the caller at once, nothing written but the return address */
	"ret\n"
	".cfi_endproc\n"
	".size vfork, .-vfork\n");

#else

pid_t vfork(void) {
	pid_t pid = fork();
	if (pid == 0)
		goxio_vfork_depth = 1; /* the child's own memory: only marks it */
	return pid;
}

#endif

/*
 * calls_process.c: fork and daemon; posix_spawn, posix_spawnp, system and popen (vfork: vfork.c).
 *
 * A forked child of a process with the engine never enters Go (lifecycle.c detects it with one
 * load); it keeps using every inherited socket through its kernel socket. A child of a process
 * without it loads its own when it needs it (loader.c). Before the fork the parent's
 * shared-memory sockets go back to the kernel for good (their ring datagrams spilled for both
 * processes: spill.c).
 */
#include "preload.h"

#include <spawn.h>
#include <stdio.h>
#include <unistd.h>

GOXIO_HIDDEN void goxio_engine_settle(void);

/* goxio_prefork hands the engine's shared-memory sockets back to the kernel before a fork: the
 * child shares them and cannot read rings (it never enters Go); what the rings held is spilled
 * where both processes read it (spill.c). */
void goxio_prefork(void) {
	goxio_real_init(); /* no dlsym in the child (real.c) */
	goxio_engine_settle();
	if (goxio_active() && !goxio_is_forked_child())
		GOXIO_ENTER(goxio_eng.prefork());
}

pid_t fork(void) {
	goxio_prefork();
	goxio_lazy_fork(GOXIO_LAZY_FORKED);
	pid_t pid = REAL(fork)();
	if (pid == 0) {
		goxio_mark_child();
		goxio_lazy_fork(GOXIO_LAZY_CHILD);
	}
	return pid;
}

int daemon(int nochdir, int noclose) {
	goxio_prefork();
	goxio_lazy_fork(GOXIO_LAZY_FORKED);
	int r = REAL(daemon)(nochdir, noclose);
	if (r == 0) {
		goxio_mark_child();
		goxio_lazy_fork(GOXIO_LAZY_CHILD);
	}
	return r;
}

/* prespawn hands the engine's shared-memory sockets that a spawned child inherits back to the
 * kernel (offload/spawn.go): the child's program uses them through the kernel, and the kernel
 * orders their datagrams across both processes. glibc's system and popen spawn through an
 * internal posix_spawn that no preload sees, hence their own wrappers. all: file actions may dup
 * a close-on-exec fd into the child, so every socket counts as inherited. */
static void prespawn(int all) {
	goxio_engine_settle();
	goxio_late_plain_all(); /* the child may inherit them (late.c) */
	if (goxio_active() && !goxio_is_forked_child())
		GOXIO_ENTER(goxio_eng.prespawn(all));
}

/* spawn_actions reports whether file actions are given and not empty (glibc's public __used). */
static int spawn_actions(const posix_spawn_file_actions_t *fa) { return fa != NULL && fa->__used > 0; }

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
	prespawn(spawn_actions(fa));
	return REAL(posix_spawn)(pid, path, fa, attr, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
	prespawn(spawn_actions(fa));
	return REAL(posix_spawnp)(pid, file, fa, attr, argv, envp);
}

int system(const char *command) {
	if (command != NULL)
		prespawn(0);
	return REAL(system)(command);
}

FILE *popen(const char *command, const char *type) {
	prespawn(0);
	return REAL(popen)(command, type);
}

/*
 * calls_process.c: fork, vfork and daemon.
 *
 * A forked child never enters Go (lifecycle.c detects it with one load); it keeps using every
 * inherited socket through its kernel socket. vfork is served by fork: a vfork child shares the
 * parent's memory, and a call into the engine from it would change the parent's bookkeeping
 * (VMA does the same).
 */
#include "goxio.h"

#include <unistd.h>

void goxio_mark_child(void);

pid_t fork(void) {
	pid_t pid = REAL(fork)();
	if (pid == 0)
		goxio_mark_child();
	return pid;
}

pid_t vfork(void) { return fork(); }

int daemon(int nochdir, int noclose) {
	int r = REAL(daemon)(nochdir, noclose);
	if (r == 0)
		goxio_mark_child();
	return r;
}

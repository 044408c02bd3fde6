/*
 * threads.c: the Go runtime's threads and the program's fd table.
 *
 * Linux takes an atomic reference on the file in every fd system call (fdget) once the fd table
 * is shared by several threads, so the Go runtime's threads make a single-threaded program pay a
 * few nanoseconds more per passthrough call. Giving each runtime thread a private, empty fd table
 * (close_range(CLOSE_RANGE_UNSHARE) from a pthread_create wrapper) removes that cost, and was
 * tried: it is unsafe. The runtime starts its network poller (an epoll fd and an eventfd) at its
 * first timer, which the runtime itself arms (the background scavenger after a GC cycle), on
 * whatever thread runs it; every M then polls those fds (findRunnable, startTheWorld). With
 * private tables the fds exist in one table only and the process aborts with "runtime: netpoll
 * failed" (seen under the shared-memory transport's garbage). So every runtime thread shares the
 * program's table, as any thread of the program does.
 *
 * goxio_fd_borrow is the log writer's way to a program fd from any thread: with one shared
 * table, the fd itself.
 */
#include "goxio.h"

int goxio_fd_borrow(int fd, int *copy) {
	*copy = 0;
	return fd;
}

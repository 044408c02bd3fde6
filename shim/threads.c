/*
 * threads.c: the Go runtime's threads leave the program's fd table.
 *
 * Linux takes an atomic reference on the file in every fd system call (fdget) as soon as the
 * calling thread's fd table is shared with another thread. The Go runtime's threads would make
 * every single-threaded program pay it on every passthrough call, although they never need the
 * program's fds: engine calls run on the program's calling thread (a cgo callback), and the
 * library's start-up runs on the main thread (goxio_late -> goxio_go_start, lifecycle.c).
 *
 * With cgo, the Go runtime creates every thread of its own through pthread_create; inside this
 * library that call binds to the pthread_create below (the library is linked -Bsymbolic, and
 * preloaded first for everyone else). A thread whose start routine lies in this library's own
 * address range (goxio_self_lo/hi, found by goxio_early before the runtime's constructor runs)
 * is the runtime's: it starts in runtime_thread_start, which gives the thread a private, empty fd
 * table (close_range(0, ~0U, CLOSE_RANGE_UNSHARE): nothing is copied), then runs the runtime's
 * start routine. The program's threads (start routine anywhere else) are created untouched and
 * share the program's table as always. Pure C: it runs while the runtime itself starts.
 *
 * What a runtime thread cannot do any more is use a program fd: the log writer borrows a copy of
 * the log target for the one write on such a thread (goxio_fd_borrow), so that the thread never
 * keeps a reference to the program's files (a daemon closing fd 2 still gives its reader EOF).
 */
#include "goxio.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

extern uintptr_t goxio_self_lo, goxio_self_hi;

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static pthread_create_fn real_pthread_create;

/* Set in a runtime thread once its fd table is its own. */
static __thread int private_fds;

/* How a runtime thread leaves the program's table, found by the first thread that tries. */
enum { LEAVE_UNKNOWN, LEAVE_CLOSE_RANGE, LEAVE_UNSHARE, LEAVE_NONE };
static int leave_mode = LEAVE_UNKNOWN;

/* close_all closes every fd of the calling thread's (private) table: close_range where the
 * kernel has it, else each fd listed in /proc/thread-self/fd. */
static int close_all(void) {
	if (syscall(SYS_close_range, 0U, ~0U, 0) == 0)
		return 0;
	int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/thread-self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	char buf[4096];
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			int fd = atoi(d->d_name);
			if (fd != dfd)
				syscall(SYS_close, fd);
		}
	}
	syscall(SYS_close, dfd);
	return 0;
}

/* leave_program_fds gives the calling (new, runtime) thread a private, empty fd table. Only ever
 * called first thing in a thread created with CLONE_FILES, so the table it leaves is shared with
 * at least its creator: the unshare never closes a fd another thread still uses. */
static void leave_program_fds(void) {
	int mode = __atomic_load_n(&leave_mode, __ATOMIC_RELAXED);
	if (mode == LEAVE_UNKNOWN || mode == LEAVE_CLOSE_RANGE) {
		/* The kernel copies nothing when the range covers every fd (Linux >= 5.9). */
		if (syscall(SYS_close_range, 0U, ~0U, CLOSE_RANGE_UNSHARE) == 0) {
			__atomic_store_n(&leave_mode, LEAVE_CLOSE_RANGE, __ATOMIC_RELAXED);
			goto done;
		}
		mode = LEAVE_UNKNOWN;
	}
	if (mode == LEAVE_UNKNOWN || mode == LEAVE_UNSHARE) {
		/* Older kernels (or a filter refusing close_range): copy the table, empty the copy. */
		if (unshare(CLONE_FILES) == 0) {
			close_all();
			__atomic_store_n(&leave_mode, LEAVE_UNSHARE, __ATOMIC_RELAXED);
			goto done;
		}
	}
	/* Neither works: the thread keeps sharing the program's table, as it did before. */
	__atomic_store_n(&leave_mode, LEAVE_NONE, __ATOMIC_RELAXED);
	return;
done:
	private_fds = 1;
}

struct runtime_start {
	void *(*fn)(void *);
	void *arg;
};

static void *runtime_thread_start(void *p) {
	struct runtime_start s = *(struct runtime_start *)p;
	free(p);
	int saved = errno;
	if (__atomic_load_n(&leave_mode, __ATOMIC_RELAXED) != LEAVE_NONE)
		leave_program_fds();
	errno = saved;
	return s.fn(s.arg);
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
	pthread_create_fn real = __atomic_load_n(&real_pthread_create, __ATOMIC_ACQUIRE);
	if (GOXIO_UNLIKELY(real == NULL)) {
		real = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (real == NULL)
			return EAGAIN;
		__atomic_store_n(&real_pthread_create, real, __ATOMIC_RELEASE);
	}
	uintptr_t s = (uintptr_t)start;
	if (s < goxio_self_lo || s >= goxio_self_hi)
		return real(thread, attr, start, arg); /* the program's thread: untouched */
	struct runtime_start *rs = malloc(sizeof(*rs));
	if (rs == NULL)
		return EAGAIN;
	rs->fn = start;
	rs->arg = arg;
	int r = real(thread, attr, runtime_thread_start, rs);
	if (r != 0)
		free(rs);
	return r;
}

/* goxio_fd_borrow returns an fd through which the calling thread reaches the program's fd: fd
 * itself on a thread that shares the program's table (*copy = 0); on a runtime thread, a copy in
 * the thread's private table (*copy = 1; the caller closes it right after use, on this thread).
 * The copy comes from pidfd_getfd on this process (the same open file, whatever it is), else from
 * reopening /proc/<pid>/fd/<fd> for appending (files, pipes, terminals). -1 when neither works. */
int goxio_fd_borrow(int fd, int *copy) {
	*copy = 0;
	if (!private_fds)
		return fd;
	int saved = errno;
	int nfd = -1;
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (pidfd >= 0) {
		nfd = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
		syscall(SYS_close, pidfd);
	}
	if (nfd < 0) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), fd);
		nfd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
	}
	errno = saved;
	if (nfd >= 0)
		*copy = 1;
	return nfd;
}

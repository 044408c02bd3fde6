/*
 * calls_fd.c: trampolines for fd lifetime: close, close_range, closefrom, fclose, dup, dup2, dup3,
 * fcntl, ioctl, and the creating calls that may reuse an fd number behind the library's back.
 *
 * Order on close: the engine forgets the fd first, then the kernel closes it, so a number freed by
 * the kernel is never still described by stale bookkeeping when another thread gets it.
 */
#include "preload.h"
#include "trampoline.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

void goxio_internal_lost(int fd);

void goxio_fd_stale(int fd, uint8_t fl) {
	if (fl & GOXIO_FD_INTERNAL)
		goxio_internal_lost(fd);
	if (fl & (GOXIO_FD_ENGINE | GOXIO_FD_WATCH | GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL))
		goxio_fd_gone(fd);
}

void goxio_fd_gone(int fd) {
	uint8_t fl = goxio_fd_flags(fd);
	if (fl & (GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL)) {
		goxio_fdt_set(fd, fl & ~(GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL));
		goxio_lazy_forget(fd); /* the number's next socket starts with nothing noted */
		fl = goxio_fd_flags(fd);
	}
	if (!(fl & (GOXIO_FD_ENGINE | GOXIO_FD_WATCH)))
		return;
	if (goxio_active())
		goxio_call(GOXIO_OP_FORGET, fd, 0, 0, 0, 0, 0);
	else
		goxio_fdt_set(fd, 0);
}

int close(int fd) {
	uint8_t fl = goxio_fd_flags(fd);
	if (GOXIO_LIKELY(fl == 0))
		return REAL(close)(fd);
	if (fl & GOXIO_FD_INTERNAL) {
		errno = EBADF;
		return -1;
	}
	if ((fl & GOXIO_FD_ENGINE) && goxio_active())
		return (int)goxio_call(GOXIO_OP_CLOSE, fd, 0, 0, 0, 0, 0);
	goxio_fd_gone(fd);
	return REAL(close)(fd);
}

static int real_close_range(unsigned lo, unsigned hi, int flags) {
	if (REAL(close_range) != NULL)
		return goxio_real.close_range(lo, hi, flags);
	return (int)REAL(syscall)(SYS_close_range, lo, hi, flags);
}

/* close_range closes [lo, hi] except the library's own fds, which stay open and invisible; the
 * engine forgets every socket of its own in the range first. */
int close_range(unsigned int lo, unsigned int hi, int flags) {
	int high = goxio_fdt_high();
	if (GOXIO_LIKELY(high < 0 || lo > (unsigned)high) || (flags & CLOSE_RANGE_CLOEXEC) || lo > hi)
		return real_close_range(lo, hi, flags);
	unsigned top = hi < (unsigned)high ? hi : (unsigned)high;
	unsigned start = lo;
	for (unsigned fd = lo; fd <= top; fd++) {
		uint8_t fl = goxio_fd_flags((int)fd);
		if (fl == 0)
			continue;
		if (fl & (GOXIO_FD_ENGINE | GOXIO_FD_WATCH | GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL))
			goxio_fd_gone((int)fd);
		if (fl & GOXIO_FD_INTERNAL) {
			if (fd > start && real_close_range(start, fd - 1, flags) < 0)
				return -1;
			start = fd + 1;
		}
	}
	if (start > hi || start == 0)
		return 0;
	return real_close_range(start, hi, flags);
}

void closefrom(int lo) {
	if (lo < 0)
		lo = 0;
	if (close_range((unsigned)lo, ~0U, 0) == 0)
		return;
	if (REAL(closefrom) != NULL)
		goxio_real.closefrom(lo);
}

int fclose(FILE *fp) {
	if (fp != NULL) {
		int fd = fileno(fp);
		if (fd >= 0 && GOXIO_UNLIKELY(goxio_fd_flags(fd) & (GOXIO_FD_ENGINE | GOXIO_FD_WATCH | GOXIO_FD_LAZY |
									  GOXIO_FD_LAZY_EPOLL)))
			goxio_fd_gone(fd);
	}
	return REAL(fclose)(fp);
}

/* watched_socket reports whether an fd with flags fl is a socket the engine knows: its own
 * (ENGINE) or one it handed to the kernel for good (WATCH, not an epoll set's WATCH | EPOLL).
 * A copy of either is registered too, so the socket's statistics last until its last fd goes. */
static inline int watched_socket(uint8_t fl) {
	return (fl & GOXIO_FD_ENGINE) || (fl & (GOXIO_FD_WATCH | GOXIO_FD_EPOLL)) == GOXIO_FD_WATCH;
}

int dup(int fd) {
	uint8_t fl = goxio_fd_flags(fd);
	if (GOXIO_UNLIKELY(fl & GOXIO_FD_INTERNAL)) {
		errno = EBADF;
		return -1;
	}
	if (GOXIO_UNLIKELY(fl & GOXIO_FD_LAZY))
		fl = goxio_late_use(fd, fl, -1); /* the engine sees the copy made */
	int nfd = REAL(dup)(fd);
	if (nfd >= 0) {
		goxio_fd_fresh(nfd);
		if (GOXIO_UNLIKELY(watched_socket(fl)) && goxio_active())
			goxio_call(GOXIO_OP_DUP, fd, (uintptr_t)nfd, 0, 0, 0, 0);
		else if (GOXIO_UNLIKELY(fl & GOXIO_FD_LAZY))
			goxio_lazy_mark(nfd, 0, -1, NULL, 0);
	}
	return nfd;
}

static int dup23(int old, int new, int flags, int three) {
	uint8_t fo = goxio_fd_flags(old), fn = goxio_fd_flags(new);
	if (GOXIO_LIKELY((fo | fn) == 0))
		return three ? REAL(dup3)(old, new, flags) : REAL(dup2)(old, new);
	if (fo & GOXIO_FD_INTERNAL) {
		errno = EBADF;
		return -1;
	}
	if ((fo & GOXIO_FD_LAZY) && old != new)
		fo = goxio_late_use(old, fo, -1); /* the engine sees the copy made */
	if (old != new) {
		if (fn & GOXIO_FD_INTERNAL)
			goxio_internal_relocate(new);
		if (fn & (GOXIO_FD_ENGINE | GOXIO_FD_WATCH | GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL))
			goxio_fd_gone(new);
	}
	int r = three ? REAL(dup3)(old, new, flags) : REAL(dup2)(old, new);
	if (r >= 0 && old != new && watched_socket(fo) && goxio_active())
		goxio_call(GOXIO_OP_DUP, old, (uintptr_t)new, 0, 0, 0, 0);
	else if (r >= 0 && old != new && (fo & GOXIO_FD_LAZY))
		goxio_lazy_mark(new, 0, -1, NULL, 0);
	return r;
}

int dup2(int old, int new) { return dup23(old, new, 0, 0); }
int dup3(int old, int new, int flags) { return dup23(old, new, flags, 1); }

static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, long arg) {
	uint8_t fl = goxio_fd_flags(fd);
	if (GOXIO_LIKELY(fl == 0)) {
		int r = real(fd, cmd, arg);
		if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0)
			goxio_fd_fresh(r);
		return r;
	}
	if (fl & GOXIO_FD_INTERNAL) {
		errno = EBADF;
		return -1;
	}
	if (GOXIO_UNLIKELY(fl & GOXIO_FD_LAZY)) {
		if (goxio_late_fcntl(fd, cmd, arg))
			return real(fd, cmd, arg); /* late.c: the engine reads the flags at birth */
		fl = goxio_fd_flags(fd);
	}
	if ((fl & GOXIO_FD_ENGINE) && goxio_active())
		return (int)goxio_call(GOXIO_OP_FCNTL, fd, (uintptr_t)cmd, (uintptr_t)arg, 0, 0, 0);
	int r = real(fd, cmd, arg);
	if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0) {
		goxio_fd_fresh(r);
		if (!(fl & GOXIO_FD_ENGINE) && watched_socket(fl) && goxio_active())
			goxio_call(GOXIO_OP_DUP, fd, (uintptr_t)r, 0, 0, 0, 0);
		else if (fl & GOXIO_FD_LAZY)
			goxio_lazy_mark(r, 0, -1, NULL, 0);
	}
	return r;
}

/* fcntl and ioctl are variadic; their third argument is read as a long, as glibc does. */
/* fcntl and fcntl64 are defined in calls_fcntl.c (without the variadic prototype). */
GOXIO_HIDDEN int goxio_fcntl_slow(int (*real)(int, int, ...), int fd, int cmd, long arg) {
	return fcntl_common(real, fd, cmd, arg);
}

int ioctl(int fd, unsigned long req, ...) {
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	TRAMPOLINE(fd, GOXIO_OP_IOCTL, REAL(ioctl)(fd, req, arg), req, arg, 0, 0, 0);
}

/* ---- creating calls: only the stale-number check ---- */

#define FRESH(expr)                                                                                        \
	do {                                                                                               \
		int r_ = (expr);                                                                           \
		if (r_ >= 0)                                                                               \
			goxio_fd_fresh(r_);                                                                \
		return r_;                                                                                 \
	} while (0)

static int needs_mode(int flags) { return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE; }

/* OPEN_MODE reads the optional mode argument of the open family (present with O_CREAT or
 * O_TMPFILE), inside the variadic function whose last named parameter is `last`. */
#define OPEN_MODE(flags, last)                                                                             \
	({                                                                                                 \
		mode_t m_ = 0;                                                                             \
		if (needs_mode(flags)) {                                                                   \
			va_list ap_;                                                                       \
			va_start(ap_, last);                                                               \
			m_ = va_arg(ap_, mode_t);                                                          \
			va_end(ap_);                                                                       \
		}                                                                                          \
		m_;                                                                                        \
	})

int open(const char *path, int flags, ...) { FRESH(REAL(open)(path, flags, OPEN_MODE(flags, flags))); }
int open64(const char *path, int flags, ...) { FRESH(REAL(open64)(path, flags, OPEN_MODE(flags, flags))); }
int openat(int dirfd, const char *path, int flags, ...) {
	FRESH(REAL(openat)(dirfd, path, flags, OPEN_MODE(flags, flags)));
}
int openat64(int dirfd, const char *path, int flags, ...) {
	FRESH(REAL(openat64)(dirfd, path, flags, OPEN_MODE(flags, flags)));
}

int creat(const char *path, mode_t mode) { FRESH(REAL(creat)(path, mode)); }

int eventfd(unsigned int initval, int flags) { FRESH(REAL(eventfd)(initval, flags)); }

int pipe(int fds[2]) {
	int r = REAL(pipe)(fds);
	if (r == 0) {
		goxio_fd_fresh(fds[0]);
		goxio_fd_fresh(fds[1]);
	}
	return r;
}

int pipe2(int fds[2], int flags) {
	int r = REAL(pipe2)(fds, flags);
	if (r == 0) {
		goxio_fd_fresh(fds[0]);
		goxio_fd_fresh(fds[1]);
	}
	return r;
}

int epoll_create(int size) { FRESH(REAL(epoll_create)(size)); }
int epoll_create1(int flags) { FRESH(REAL(epoll_create1)(flags)); }

/* syscall(2) is interposed for the numbers that close or replace an fd (close, close_range, dup2,
 * dup3): a program that closes every fd through syscall() must not take the library's own, which
 * include the Go runtime's epoll fd and eventfd (the runtime aborts when they disappear). Those
 * numbers go to the wrappers above; every other number goes to the real syscall() with the six
 * register arguments, which is all the kernel takes (glibc's syscall() reads six too). */
long syscall(long nr, ...) {
	va_list ap;
	va_start(ap, nr);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);
	switch (nr) {
	case SYS_close:
		return close((int)a);
	case SYS_close_range:
		return close_range((unsigned)a, (unsigned)b, (int)c);
#ifdef SYS_dup2
	case SYS_dup2:
		return dup2((int)a, (int)b);
#endif
	case SYS_dup3:
		return dup3((int)a, (int)b, (int)c);
	}
	return REAL(syscall)(nr, a, b, c, d, e, f);
}

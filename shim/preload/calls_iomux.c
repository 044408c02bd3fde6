/*
 * calls_iomux.c: select, pselect, poll, ppoll and epoll.
 *
 * Sockets carried by the kernel have the kernel's readiness, so a call whose fds include no ring
 * socket (GOXIO_FD_RING) goes to the kernel unchanged, after one byte load per fd (none at all
 * while the process has no ring socket). A call that includes one enters the engine, which looks
 * at the rings and at the kernel (offload/iomux.go).
 *
 * epoll: ring sockets are not added to the program's epoll set but to an inner epoll fd of the
 * engine's, itself registered in the program's set with a tag as data (an address inside the fd
 * table, see goxio_is_tag), so the program's set still becomes readable, also when nested or
 * polled. epoll_wait on such a set (GOXIO_FD_EPOLL) enters the engine, which translates; a forked
 * child, which never enters Go, only has the tag events removed.
 */
#include "preload.h"

#include <time.h>

/* glibc declares poll's array write-only (access attribute); the trampolines read the fds the
 * program put there, which the kernel reads too. */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/* goxio_ring_fds counts the fds flagged GOXIO_FD_RING (fdtable.c). While it is not zero, select
 * and poll enter the engine, which reads the program's fd arrays with fault protection (a bad
 * pointer is EFAULT, as from the kernel) and looks for ring sockets itself. */
extern volatile int goxio_ring_fds;

/* lazy_pollfd loads the engine when one of the fds is a socket made before it (GOXIO_FD_LAZY):
 * a wait on such a socket is its first use that the engine must see. */
__attribute__((noinline)) static void lazy_pollfd(const struct pollfd *fds, nfds_t n) {
	if (GOXIO_LIKELY(__atomic_load_n(&goxio_lazy_fds, __ATOMIC_RELAXED) == 0) || fds == NULL)
		return;
	for (nfds_t i = 0; i < n; i++)
		if ((goxio_fd_flags(fds[i].fd) & GOXIO_FD_LAZY) && goxio_lazy_waits(fds[i].fd))
			goxio_lazy_fd(fds[i].fd); /* the first loads the engine; late ones are born (late.c) */
}

static void lazy_fdset(int n, const fd_set *r, const fd_set *w, const fd_set *e) {
	if (GOXIO_LIKELY(__atomic_load_n(&goxio_lazy_fds, __ATOMIC_RELAXED) == 0))
		return;
	if (n > FD_SETSIZE)
		n = FD_SETSIZE;
	for (int fd = 0; fd < n; fd++)
		if ((goxio_fd_flags(fd) & GOXIO_FD_LAZY) && goxio_lazy_waits(fd) &&
		    ((r != NULL && FD_ISSET(fd, r)) || (w != NULL && FD_ISSET(fd, w)) || (e != NULL && FD_ISSET(fd, e))))
			goxio_lazy_fd(fd);
}

/* lazy_epoll loads the engine when the epoll set holds a socket made before it. */
static inline void lazy_epoll(int epfd) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(epfd) & GOXIO_FD_LAZY_EPOLL))
		goxio_lazy_fd(epfd);
}

static inline int rings_possible(void) { return __atomic_load_n(&goxio_ring_fds, __ATOMIC_RELAXED) > 0 && goxio_active(); }

static int any_ring_pollfd(const struct pollfd *fds, nfds_t n) { return fds != NULL && n > 0; }

static int any_ring_fdset(int n, const fd_set *r) { return r != NULL && n > 0; }

/* Datagrams spilled at a fork (spill.c) are queued on their socket as far as the program can
 * tell, but its kernel socket does not hold them: in a process with spill regions (a forked child
 * above all, which never enters the engine) select and poll report such a socket readable, after
 * a look at the kernel that does not wait (which also checks the program's arrays). */
static inline int spills_possible(void) { return __atomic_load_n(&goxio_spill_any, __ATOMIC_RELAXED) != 0; }

/* SPILL_NONE: no fd of the call holds spilled datagrams; the caller makes its own call. */
#define SPILL_NONE (-2)

/* spill_poll answers a poll at once when one of the fds asks for input and holds spilled
 * datagrams, or when the kernel has something already; else SPILL_NONE. */
static int spill_poll(struct pollfd *fds, nfds_t n, const sigset_t *mask) {
	struct timespec zero = {0, 0};
	int r = REAL(ppoll)(fds, n, &zero, mask);
	if (r < 0)
		return r;
	int spilled = 0;
	for (nfds_t i = 0; i < n; i++) {
		short want = fds[i].events & (POLLIN | POLLRDNORM);
		if (fds[i].fd < 0 || want == 0 || !goxio_spill_ready(fds[i].fd))
			continue;
		if (fds[i].revents == 0)
			r++;
		fds[i].revents |= want;
		spilled = 1;
	}
	return spilled || r > 0 ? r : SPILL_NONE;
}

/* spill_select answers a select at once when one of the fds of the read set holds spilled
 * datagrams; else SPILL_NONE. The read set is copied through the kernel (process_vm_readv), so
 * that a bad pointer is left for the kernel's own call to report. */
static int spill_select(int n, fd_set *r, fd_set *w, fd_set *e, const sigset_t *mask) {
	if (r == NULL || n <= 0 || n > FD_SETSIZE)
		return SPILL_NONE;
	fd_set in;
	FD_ZERO(&in);
	size_t bytes = ((size_t)n + 8 * sizeof(long) - 1) / (8 * sizeof(long)) * sizeof(long);
	struct iovec local = {&in, bytes}, remote = {r, bytes};
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)bytes)
		return SPILL_NONE;
	int any = 0;
	for (int fd = 0; fd < n && !any; fd++)
		any = FD_ISSET(fd, &in) && goxio_spill_ready(fd);
	if (!any)
		return SPILL_NONE;
	struct timespec zero = {0, 0};
	int k = REAL(pselect)(n, r, w, e, &zero, mask);
	if (k < 0)
		return k;
	for (int fd = 0; fd < n; fd++)
		if (FD_ISSET(fd, &in) && !FD_ISSET(fd, r) && goxio_spill_ready(fd)) {
			FD_SET(fd, r);
			k++;
		}
	return k;
}

static const struct timespec *ms_to_ts(int ms, struct timespec *ts) {
	if (ms < 0)
		return NULL;
	ts->tv_sec = ms / 1000;
	ts->tv_nsec = (long)(ms % 1000) * 1000000L;
	return ts;
}

int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv) {
	lazy_fdset(n, r, w, e);
	if (GOXIO_UNLIKELY(rings_possible()) && any_ring_fdset(n, r)) {
		struct goxio_select_args a = {tv, NULL, NULL, goxio_sig_counters()};
		return (int)goxio_call(GOXIO_OP_SELECT, -1, (uintptr_t)n, (uintptr_t)r, (uintptr_t)w, (uintptr_t)e, (uintptr_t)&a);
	}
	if (GOXIO_UNLIKELY(spills_possible())) {
		int k = spill_select(n, r, w, e, NULL);
		if (k != SPILL_NONE)
			return k;
	}
	return REAL(select)(n, r, w, e, tv);
}

int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts, const sigset_t *mask) {
	lazy_fdset(n, r, w, e);
	if (GOXIO_UNLIKELY(rings_possible()) && any_ring_fdset(n, r)) {
		struct goxio_select_args a = {NULL, ts, mask, goxio_sig_counters()};
		if (ts == NULL)
			a.tv = NULL;
		return (int)goxio_call(GOXIO_OP_SELECT, -1, (uintptr_t)n, (uintptr_t)r, (uintptr_t)w, (uintptr_t)e, (uintptr_t)&a);
	}
	if (GOXIO_UNLIKELY(spills_possible())) {
		int k = spill_select(n, r, w, e, mask);
		if (k != SPILL_NONE)
			return k;
	}
	return REAL(pselect)(n, r, w, e, ts, mask);
}

static int poll_engine(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask) {
	return (int)goxio_call(GOXIO_OP_POLL, -1, (uintptr_t)fds, (uintptr_t)n, (uintptr_t)ts, (uintptr_t)mask,
			       (uintptr_t)goxio_sig_counters());
}

int poll(struct pollfd *fds, nfds_t n, int timeout) {
	lazy_pollfd(fds, n);
	if (GOXIO_UNLIKELY(rings_possible()) && any_ring_pollfd(fds, n)) {
		struct timespec ts;
		return poll_engine(fds, n, ms_to_ts(timeout, &ts), NULL);
	}
	if (GOXIO_UNLIKELY(spills_possible())) {
		int k = spill_poll(fds, n, NULL);
		if (k != SPILL_NONE)
			return k;
	}
	return REAL(poll)(fds, n, timeout);
}

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
	if (n <= fdslen / sizeof(*fds))
		lazy_pollfd(fds, n);
	if (GOXIO_UNLIKELY(rings_possible()) && n <= fdslen / sizeof(*fds) && any_ring_pollfd(fds, n)) {
		struct timespec ts;
		return poll_engine(fds, n, ms_to_ts(timeout, &ts), NULL);
	}
	if (GOXIO_UNLIKELY(spills_possible()) && n <= fdslen / sizeof(*fds)) {
		int k = spill_poll(fds, n, NULL);
		if (k != SPILL_NONE)
			return k;
	}
	return REAL(__poll_chk)(fds, n, timeout, fdslen);
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask) {
	lazy_pollfd(fds, n);
	if (GOXIO_UNLIKELY(rings_possible()) && any_ring_pollfd(fds, n))
		return poll_engine(fds, n, ts, mask);
	if (GOXIO_UNLIKELY(spills_possible())) {
		int k = spill_poll(fds, n, mask);
		if (k != SPILL_NONE)
			return k;
	}
	return REAL(ppoll)(fds, n, ts, mask);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask, size_t fdslen) {
	if (n <= fdslen / sizeof(*fds))
		lazy_pollfd(fds, n);
	if (GOXIO_UNLIKELY(rings_possible()) && n <= fdslen / sizeof(*fds) && any_ring_pollfd(fds, n))
		return poll_engine(fds, n, ts, mask);
	if (GOXIO_UNLIKELY(spills_possible()) && n <= fdslen / sizeof(*fds)) {
		int k = spill_poll(fds, n, mask);
		if (k != SPILL_NONE)
			return k;
	}
	return REAL(__ppoll_chk)(fds, n, ts, mask, fdslen);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
	uint8_t ef = goxio_fd_flags(epfd), ff = goxio_fd_flags(fd);
	if (GOXIO_UNLIKELY(ff & GOXIO_FD_LAZY))
		ff = goxio_late_use(fd, ff, -1); /* a member the engine must know (late.c) */
	if (GOXIO_UNLIKELY((ef | ff) & GOXIO_FD_INTERNAL)) {
		errno = EBADF;
		return -1;
	}
	if (GOXIO_UNLIKELY(ff & GOXIO_FD_RING) && goxio_active())
		return (int)goxio_call(GOXIO_OP_EPOLL_CTL, fd, (uintptr_t)epfd, (uintptr_t)op, (uintptr_t)ev, 0, 0);
	int r = REAL(epoll_ctl)(epfd, op, fd, ev);
	if (GOXIO_UNLIKELY(ff & GOXIO_FD_LAZY) && r == 0 && op == EPOLL_CTL_ADD && !(ef & GOXIO_FD_LAZY_EPOLL) &&
	    goxio_lazy_waits(fd))
		goxio_fdt_set(epfd, goxio_fd_flags(epfd) | GOXIO_FD_LAZY_EPOLL);
	return r;
}

/* strip_tags removes the engine's tag events from what the kernel returned (forked children and
 * calls before the engine is ready). */
static int strip_tags(struct epoll_event *ev, int n) {
	int out = 0;
	for (int i = 0; i < n; i++) {
		if (goxio_is_tag(ev[i].data.u64))
			continue;
		if (out != i)
			ev[out] = ev[i];
		out++;
	}
	return out;
}

static int epoll_engine(int epfd, struct epoll_event *ev, int n, const struct timespec *ts, const sigset_t *mask) {
	return (int)goxio_call(GOXIO_OP_EPOLL_WAIT, epfd, (uintptr_t)ev, (uintptr_t)n, (uintptr_t)ts, (uintptr_t)mask,
			       (uintptr_t)goxio_sig_counters());
}

/* ep_wait0 is a wait on epfd that does not wait, for goxio_spill_epoll. */
static int ep_wait0(int epfd, struct epoll_event *ev, int n, const sigset_t *mask) {
	if ((goxio_fd_flags(epfd) & GOXIO_FD_EPOLL) && goxio_active()) {
		struct timespec zero = {0, 0};
		return epoll_engine(epfd, ev, n, &zero, mask);
	}
	int r = REAL(epoll_pwait)(epfd, ev, n, 0, mask);
	return r > 0 && (goxio_fd_flags(epfd) & GOXIO_FD_EPOLL) ? strip_tags(ev, r) : r;
}

int epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout) {
	lazy_epoll(epfd);
	int s = goxio_spill_epoll(epfd, ev, n, ep_wait0, NULL);
	if (GOXIO_UNLIKELY(s != GOXIO_SPILL_NONE))
		return s;
	if (GOXIO_UNLIKELY(goxio_fd_flags(epfd) & GOXIO_FD_EPOLL)) {
		if (goxio_active()) {
			struct timespec ts;
			return epoll_engine(epfd, ev, n, ms_to_ts(timeout, &ts), NULL);
		}
		int r = REAL(epoll_wait)(epfd, ev, n, timeout);
		return r > 0 ? strip_tags(ev, r) : r;
	}
	int r = REAL(epoll_wait)(epfd, ev, n, timeout);
	if (GOXIO_UNLIKELY(r > 0 && (goxio_fd_flags(epfd) & GOXIO_FD_EPOLL)) && (r = strip_tags(ev, r)) == 0 && timeout != 0)
		return epoll_wait(epfd, ev, n, timeout); /* the engine took the set over while we slept */
	return r;
}

int epoll_pwait(int epfd, struct epoll_event *ev, int n, int timeout, const sigset_t *mask) {
	lazy_epoll(epfd);
	int s = goxio_spill_epoll(epfd, ev, n, ep_wait0, mask);
	if (GOXIO_UNLIKELY(s != GOXIO_SPILL_NONE))
		return s;
	if (GOXIO_UNLIKELY(goxio_fd_flags(epfd) & GOXIO_FD_EPOLL)) {
		if (goxio_active()) {
			struct timespec ts;
			return epoll_engine(epfd, ev, n, ms_to_ts(timeout, &ts), mask);
		}
		int r = REAL(epoll_pwait)(epfd, ev, n, timeout, mask);
		return r > 0 ? strip_tags(ev, r) : r;
	}
	int r = REAL(epoll_pwait)(epfd, ev, n, timeout, mask);
	if (GOXIO_UNLIKELY(r > 0 && (goxio_fd_flags(epfd) & GOXIO_FD_EPOLL)) && (r = strip_tags(ev, r)) == 0 && timeout != 0)
		return epoll_pwait(epfd, ev, n, timeout, mask); /* the engine took the set over while we slept */
	return r;
}

int epoll_pwait2(int epfd, struct epoll_event *ev, int n, const struct timespec *ts, const sigset_t *mask) {
	if (REAL(epoll_pwait2) == NULL) {
		errno = ENOSYS;
		return -1;
	}
	lazy_epoll(epfd);
	int s = goxio_spill_epoll(epfd, ev, n, ep_wait0, mask);
	if (GOXIO_UNLIKELY(s != GOXIO_SPILL_NONE))
		return s;
	if (GOXIO_UNLIKELY(goxio_fd_flags(epfd) & GOXIO_FD_EPOLL)) {
		if (goxio_active())
			return epoll_engine(epfd, ev, n, ts, mask);
		int r = goxio_real.epoll_pwait2(epfd, ev, n, ts, mask);
		return r > 0 ? strip_tags(ev, r) : r;
	}
	return goxio_real.epoll_pwait2(epfd, ev, n, ts, mask);
}

/*
 * calls_iomux.c: select, pselect, poll, ppoll and epoll.
 *
 * Readiness of a socket carried by the kernel transport is the kernel's own, so these calls go to
 * the kernel unchanged: an fd set that mixes engine sockets, kernel sockets, pipes and anything
 * else is answered exactly as without the library. Transports that carry data outside the kernel
 * hook in here. epoll_ctl still sees the library's own fds as closed.
 */
#include "goxio.h"

int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv) { return REAL(select)(n, r, w, e, tv); }

int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts, const sigset_t *mask) {
	return REAL(pselect)(n, r, w, e, ts, mask);
}

int poll(struct pollfd *fds, nfds_t n, int timeout) { return REAL(poll)(fds, n, timeout); }

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
	return REAL(__poll_chk)(fds, n, timeout, fdslen);
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask) {
	return REAL(ppoll)(fds, n, ts, mask);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask, size_t fdslen) {
	return REAL(__ppoll_chk)(fds, n, ts, mask, fdslen);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev) {
	if (GOXIO_UNLIKELY((goxio_fd_flags(epfd) | goxio_fd_flags(fd)) & GOXIO_FD_INTERNAL)) {
		errno = EBADF;
		return -1;
	}
	return REAL(epoll_ctl)(epfd, op, fd, ev);
}

int epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout) { return REAL(epoll_wait)(epfd, ev, n, timeout); }

int epoll_pwait(int epfd, struct epoll_event *ev, int n, int timeout, const sigset_t *mask) {
	return REAL(epoll_pwait)(epfd, ev, n, timeout, mask);
}

int epoll_pwait2(int epfd, struct epoll_event *ev, int n, const struct timespec *ts, const sigset_t *mask) {
	if (REAL(epoll_pwait2) == NULL) {
		errno = ENOSYS;
		return -1;
	}
	return goxio_real.epoll_pwait2(epfd, ev, n, ts, mask);
}

/*
 * calls_socket.c: trampolines for the socket API proper.
 *
 * Shape of every trampoline (see goxio.h): flags == 0 -> real function; the library's own fd ->
 * EBADF; an engine socket while the engine is active -> goxio_call; anything else -> real.
 */
#include "preload.h"
#include "trampoline.h"

#include <netinet/in.h>

GOXIO_HIDDEN extern volatile int goxio_vma_kernel_threads;
GOXIO_HIDDEN int goxio_vma_thread_kernel(void);

int socket(int domain, int type, int protocol) {
	int fd = REAL(socket)(domain, type, protocol);
	if (fd < 0)
		return fd;
	goxio_fd_fresh(fd);
	/* a thread VMA's thread_offload(0, tid) named makes kernel sockets (vma_extra.c) */
	if (GOXIO_UNLIKELY(__atomic_load_n(&goxio_vma_kernel_threads, __ATOMIC_ACQUIRE) != 0) && goxio_vma_thread_kernel())
		return fd;
	if ((domain == AF_INET || domain == AF_INET6) && ((type & 0xf) == SOCK_DGRAM || (type & 0xf) == SOCK_STREAM)) {
		int saved = errno;
		if (goxio_active()) {
			/* TCP meets the engine at its first use that needs it (late.c). */
			if (!goxio_late_mark(fd, domain, type, protocol))
				goxio_call(GOXIO_OP_SOCKET, fd, (uintptr_t)domain, (uintptr_t)type, (uintptr_t)protocol, 0, 0);
		}
		else if (!goxio_is_forked_child())
			/* the engine adopts it when it loads; its type is noted now (lazy_ksend.c
			 * would ask the kernel at its first send: a system call per socket per request) */
			goxio_lazy_mark(fd, GOXIO_LAZY_TYPED | ((type & 0xf) == SOCK_DGRAM ? GOXIO_LAZY_DGRAM : 0), -1, NULL,
					0);
		errno = saved;
	}
	return fd;
}

int socketpair(int domain, int type, int protocol, int sv[2]) {
	int r = REAL(socketpair)(domain, type, protocol, sv);
	if (r == 0) {
		goxio_fd_fresh(sv[0]);
		goxio_fd_fresh(sv[1]);
	}
	return r;
}

int shutdown(int fd, int how) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY) && goxio_early_shutdown(fd, how))
		return REAL(shutdown)(fd, how); /* noted for the engine (early.c) */
	TRAMPOLINE(fd, GOXIO_OP_SHUTDOWN, REAL(shutdown)(fd, how), how, 0, 0, 0, 0);
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY) && goxio_engine_absent()) {
		int r = REAL(bind)(fd, addr, len);
		if (r == 0) {
			int saved = errno;
			goxio_lazy_mark(fd, GOXIO_LAZY_BOUND, -1, NULL, 0); /* its receives need the engine */
			errno = saved;
		}
		return r;
	}
	TRAMPOLINE(fd, GOXIO_OP_BIND, REAL(bind)(fd, addr, len), addr, len, 0, 0, 0);
}

int listen(int fd, int backlog) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY))
		goxio_late_birth(fd); /* the engine listens (late.c) */
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY)) {
		int r = REAL(listen)(fd, backlog);
		if (r == 0) {
			goxio_lazy_mark(fd, GOXIO_LAZY_LISTENING | GOXIO_LAZY_DIR_TRIED, -1, NULL, 0);
			goxio_lazy_listen(fd); /* clients with an engine find it (lazy_listen.c) */
		}
		return r;
	}
	TRAMPOLINE(fd, GOXIO_OP_LISTEN, REAL(listen)(fd, backlog), backlog, 0, 0, 0, 0);
}

static int accept_common(int fd, struct sockaddr *addr, socklen_t *len, int flags, int four) {
	uint8_t fl = goxio_fd_flags(fd);
	if (GOXIO_UNLIKELY(fl & GOXIO_FD_INTERNAL)) {
		errno = EBADF;
		return -1;
	}
	if (GOXIO_UNLIKELY(fl & GOXIO_FD_ENGINE) && goxio_active()) {
		/* a listener whose connections pair late: their early phase is in C (early.c) */
		int nfd = goxio_early_accept(fd, addr, len, flags, four);
		if (nfd != -2)
			return nfd;
		return (int)goxio_call(GOXIO_OP_ACCEPT4, fd, (uintptr_t)addr, (uintptr_t)len, (uintptr_t)flags, 0, 0);
	}
	int nfd = four ? REAL(accept4)(fd, addr, len, flags) : REAL(accept)(fd, addr, len);
	if (nfd >= 0) {
		goxio_fd_fresh(nfd);
		if (GOXIO_UNLIKELY(fl & GOXIO_FD_LAZY)) {
			int saved = errno;
			goxio_lazy_mark(nfd, GOXIO_LAZY_ACCEPTED, fd, NULL, 0);
			errno = saved;
		}
	}
	return nfd;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len) { return accept_common(fd, addr, len, 0, 0); }

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
	if (REAL(accept4) == NULL) {
		errno = ENOSYS;
		return -1;
	}
	return accept_common(fd, addr, len, flags, 1);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
	uint8_t fl = goxio_fd_flags(fd);
	if (GOXIO_LIKELY(fl == 0))
		return REAL(connect)(fd, addr, len);
	int late = GOXIO_UNLIKELY(fl & GOXIO_FD_LAZY) ? goxio_late_connect(fd, addr, len) : 0;
	if (late != 0) {
		/* 1: no goxio listener there: a plain kernel connection from now on (late.c); 2: a
		 * goxio listener: the connection's early phase is in C (early.c); 3: in it already */
		int r = REAL(connect)(fd, addr, len);
		if (r == 0 || errno == EINPROGRESS)
			goxio_late_seen(addr, len);
		if (late == 2)
			goxio_early_connected(fd, addr, len, r);
		return r;
	}
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY)) {
		int r = REAL(connect)(fd, addr, len);
		if (r == 0 || errno == EINPROGRESS) {
			int saved = errno;
			/* no goxio socket there: plain from now on (lazy_ksend.c), else noted */
			if (!goxio_lazy_connect_plain(fd, addr, len))
				goxio_lazy_mark(fd, GOXIO_LAZY_CONNECTED, -1, addr, len);
			errno = saved;
		}
		return r;
	}
	fl = goxio_fd_flags(fd);
	if (fl & GOXIO_FD_INTERNAL) {
		errno = EBADF;
		return -1;
	}
	if (!((fl & GOXIO_FD_ENGINE) && goxio_active()))
		return REAL(connect)(fd, addr, len);
	int r = (int)goxio_call(GOXIO_OP_CONNECT, fd, (uintptr_t)addr, (uintptr_t)len, 0, 0, 0);
	if (r == 0 || errno == EINPROGRESS)
		goxio_late_seen(addr, len); /* the kernel read it: the next connect may read it here */
	return r;
}

int getsockname(int fd, struct sockaddr *addr, socklen_t *len) {
	TRAMPOLINE(fd, GOXIO_OP_GETSOCKNAME, REAL(getsockname)(fd, addr, len), addr, len, 0, 0, 0);
}

int getpeername(int fd, struct sockaddr *addr, socklen_t *len) {
	TRAMPOLINE(fd, GOXIO_OP_GETPEERNAME, REAL(getpeername)(fd, addr, len), addr, len, 0, 0, 0);
}

static int is_dgram(int fd) {
	int type = 0, saved = errno;
	socklen_t l = sizeof type;
	int r = REAL(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &l);
	errno = saved;
	return r == 0 && type == SOCK_DGRAM;
}

/* is_mcast6 reports whether an IPPROTO_IPV6 option is a multicast membership or source filter
 * (IPV6_V6ONLY and the others set on every socket by some runtimes do not load the engine). */
static int is_mcast6(int name) {
	switch (name) {
	case IPV6_ADD_MEMBERSHIP: case IPV6_DROP_MEMBERSHIP: case MCAST_JOIN_GROUP: case MCAST_LEAVE_GROUP:
	case MCAST_JOIN_SOURCE_GROUP: case MCAST_LEAVE_SOURCE_GROUP: case MCAST_BLOCK_SOURCE:
	case MCAST_UNBLOCK_SOURCE: case MCAST_MSFILTER:
		return 1;
	}
	return 0;
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY) && goxio_late_option(fd, level, name))
		return REAL(setsockopt)(fd, level, name, val, len); /* read back at birth (late.c) */
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY) &&
	    (level == IPPROTO_IP || (level == IPPROTO_IPV6 && is_mcast6(name))) && is_dgram(fd)) {
		/* Multicast memberships and source filters of a UDP socket: the engine must see them
		 * (they publish the socket as a member), so the engine loads now. Without it, the
		 * socket stays with the kernel when an engine adopts it later. */
		goxio_lazy_fd(fd);
		if (goxio_fd_flags(fd) & GOXIO_FD_LAZY) {
			int r = REAL(setsockopt)(fd, level, name, val, len);
			if (r == 0)
				goxio_lazy_mark(fd, GOXIO_LAZY_MCAST, -1, NULL, 0);
			return r;
		}
	}
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY) && level == SOL_SOCKET &&
	    (name == SO_RCVBUF || name == SO_RCVBUFFORCE)) {
		/* No engine needed; an engine that adopts the socket later honours the program's
		 * buffer as its receive limit (a member that kept the default gets its ring's). */
		int r = REAL(setsockopt)(fd, level, name, val, len);
		if (r == 0)
			goxio_lazy_mark(fd, GOXIO_LAZY_RCVBUF, -1, NULL, 0);
		return r;
	}
	TRAMPOLINE(fd, GOXIO_OP_SETSOCKOPT, REAL(setsockopt)(fd, level, name, val, len), level, name, val, len, 0);
}

GOXIO_HIDDEN int goxio_vma_get_api(void *val, socklen_t *len);

int getsockopt(int fd, int level, int name, void *val, socklen_t *len) {
	if (GOXIO_UNLIKELY(name == 2800 && level == SOL_SOCKET))
		return goxio_vma_get_api(val, len); /* SO_VMA_GET_API, on any fd (vma_extra.c) */
	TRAMPOLINE(fd, GOXIO_OP_GETSOCKOPT, REAL(getsockopt)(fd, level, name, val, len), level, name, val, len, 0);
}

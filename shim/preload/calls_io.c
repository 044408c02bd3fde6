/*
 * calls_io.c: trampolines for data transfer: read/recv and write/send families, their glibc
 * fortified variants, recvmmsg/sendmmsg and sendfile.
 */
#include "preload.h"
#include "trampoline.h"
#include "box.h"

#include <sys/sendfile.h>

extern void __chk_fail(void) __attribute__((noreturn));

/* SPILL serves a receive from the datagrams spilled at a fork (spill.c) while there are any. */
#define SPILL(fd, flags, iov, iovcnt, name, namelen, msgflags)                                            \
	do {                                                                                               \
		if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_SPILL) &&                                 \
		    !((flags) & (MSG_ERRQUEUE | MSG_OOB))) {                                               \
			long r_;                                                                           \
			if (goxio_spill_recv(fd, iov, iovcnt, flags, name, namelen, msgflags, &r_))        \
				return r_;                                                                 \
		}                                                                                          \
	} while (0)

/* SPILL1 is SPILL for one buffer, and VMA_CB after it. */
#define SPILL1(fd, buf, n, flags, name, namelen)                                                           \
	do {                                                                                               \
		struct iovec v_ = {(buf), (n)};                                                            \
		SPILL(fd, flags, &v_, 1, name, namelen, NULL);                                             \
		VMA_CB(fd, flags, &v_, 1, name, namelen, NULL);                                            \
	} while (0)

GOXIO_HIDDEN extern volatile int goxio_vma_cbs;
GOXIO_HIDDEN int goxio_vma_cb_recv(int fd, const struct iovec *iov, size_t iovcnt, int flags, void *name,
				   socklen_t *namelen, int *msgflags, long *ret);

/* VMA_CB serves a receive on a socket with a VMA receive callback (vma_extra.c): the callback sees
 * each datagram first. One global load while no callback is registered. */
#define VMA_CB(fd, flags, iov, iovcnt, name, namelen, msgflags)                                           \
	do {                                                                                               \
		if (GOXIO_UNLIKELY(__atomic_load_n(&goxio_vma_cbs, __ATOMIC_RELAXED) != 0) &&              \
		    goxio_fd_flags(fd) != 0) {                                                             \
			long r_;                                                                           \
			if (goxio_vma_cb_recv(fd, iov, iovcnt, flags, name, namelen, msgflags, &r_))       \
				return r_;                                                                 \
		}                                                                                          \
	} while (0)

/* BOX_RECV serves a plain receive on a ring socket of the engine from the records queued in its
 * box, or through the engine, which queues the ones after it there (box.c). One byte load on any
 * other fd. */
#define BOX_RECV(fd, op, buf, n, flags, name, namelen)                                                     \
	do {                                                                                               \
		if (GOXIO_UNLIKELY(goxio_box_fd(fd))) {                                                    \
			long r_;                                                                           \
			if (goxio_box_recv(fd, op, buf, n, flags, name, namelen, &r_))                     \
				return r_;                                                                 \
		}                                                                                          \
	} while (0)

/* CHK_TRAMPOLINE is TRAMPOLINE for glibc's fortified variants: on the engine path the buffer
 * check that the real __*_chk function would make is made here (n > buflen aborts the program). */
#define CHK_TRAMPOLINE(fd, n, buflen, op, realcall, a0, a1, a2, a3, a4)                                   \
	do {                                                                                               \
		uint8_t fl_ = goxio_fd_flags(fd);                                                          \
		if (GOXIO_LIKELY(fl_ == 0))                                                                \
			return realcall;                                                                   \
		if (GOXIO_UNLIKELY(fl_ & GOXIO_FD_LAZY)) {                                                 \
			EARLY_STEP(fd, op, realcall, a1, a2);                                              \
			if (goxio_lazy_recv_plain(fd, op))                                                 \
				return realcall; /* plain now (lazy_ksend.c) */                            \
		}                                                                                          \
		fl_ = goxio_data_flags(fd, fl_);                                                           \
		if (fl_ & GOXIO_FD_INTERNAL) {                                                             \
			errno = EBADF;                                                                     \
			return -1;                                                                         \
		}                                                                                          \
		if ((fl_ & GOXIO_FD_ENGINE) && goxio_active()) {                                           \
			if ((n) > (buflen))                                                                \
				__chk_fail();                                                              \
			return goxio_call(op, fd, (uintptr_t)(a0), (uintptr_t)(a1), (uintptr_t)(a2),       \
					  (uintptr_t)(a3), (uintptr_t)(a4));                               \
		}                                                                                          \
		return realcall;                                                                           \
	} while (0)

ssize_t read(int fd, void *buf, size_t n) {
	SPILL1(fd, buf, n, 0, NULL, NULL);
	BOX_RECV(fd, GOXIO_OP_READ, buf, n, 0, NULL, NULL);
	DATA_TRAMPOLINE(fd, GOXIO_OP_READ, REAL(read)(fd, buf, n), buf, n, 0, 0, 0);
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
	if (n > buflen)
		__chk_fail();
	SPILL1(fd, buf, n, 0, NULL, NULL);
	BOX_RECV(fd, GOXIO_OP_READ, buf, n, 0, NULL, NULL);
	CHK_TRAMPOLINE(fd, n, buflen, GOXIO_OP_READ, REAL(__read_chk)(fd, buf, n, buflen), buf, n, 0, 0, 0);
}

ssize_t readv(int fd, const struct iovec *iov, int cnt) {
	SPILL(fd, 0, iov, cnt > 0 ? (size_t)cnt : 0, NULL, NULL, NULL);
	VMA_CB(fd, 0, iov, cnt > 0 ? (size_t)cnt : 0, NULL, NULL, NULL);
	DATA_TRAMPOLINE(fd, GOXIO_OP_READV, REAL(readv)(fd, iov, cnt), iov, cnt, 0, 0, 0);
}

ssize_t recv(int fd, void *buf, size_t n, int flags) {
	SPILL1(fd, buf, n, flags, NULL, NULL);
	BOX_RECV(fd, GOXIO_OP_RECVFROM, buf, n, flags, NULL, NULL);
	DATA_TRAMPOLINE(fd, GOXIO_OP_RECVFROM, REAL(recv)(fd, buf, n, flags), buf, n, flags, 0, 0);
}

ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) {
	if (n > buflen)
		__chk_fail();
	SPILL1(fd, buf, n, flags, NULL, NULL);
	BOX_RECV(fd, GOXIO_OP_RECVFROM, buf, n, flags, NULL, NULL);
	CHK_TRAMPOLINE(fd, n, buflen, GOXIO_OP_RECVFROM, REAL(__recv_chk)(fd, buf, n, buflen, flags), buf, n, flags, 0, 0);
}

ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen) {
	SPILL1(fd, buf, n, flags, addr, alen);
	BOX_RECV(fd, GOXIO_OP_RECVFROM, buf, n, flags, addr, alen);
	DATA_TRAMPOLINE(fd, GOXIO_OP_RECVFROM, REAL(recvfrom)(fd, buf, n, flags, addr, alen), buf, n, flags, addr, alen);
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
		       socklen_t *alen) {
	if (n > buflen)
		__chk_fail();
	SPILL1(fd, buf, n, flags, addr, alen);
	BOX_RECV(fd, GOXIO_OP_RECVFROM, buf, n, flags, addr, alen);
	CHK_TRAMPOLINE(fd, n, buflen, GOXIO_OP_RECVFROM, REAL(__recvfrom_chk)(fd, buf, n, buflen, flags, addr, alen), buf,
		       n, flags, addr, alen);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_SPILL) && msg != NULL) {
		int mf_ = 0;
		long r_;
		if (!(flags & (MSG_ERRQUEUE | MSG_OOB)) &&
		    goxio_spill_recv(fd, msg->msg_iov, msg->msg_iovlen, flags, msg->msg_name, &msg->msg_namelen, &mf_, &r_)) {
			msg->msg_flags = mf_;
			msg->msg_controllen = 0;
			return r_;
		}
	}
	if (GOXIO_UNLIKELY(__atomic_load_n(&goxio_vma_cbs, __ATOMIC_RELAXED) != 0) && goxio_fd_flags(fd) != 0 &&
	    msg != NULL) {
		int mf_ = 0;
		long r_;
		if (goxio_vma_cb_recv(fd, msg->msg_iov, msg->msg_iovlen, flags, msg->msg_name, &msg->msg_namelen, &mf_, &r_)) {
			msg->msg_flags = mf_;
			msg->msg_controllen = 0;
			return r_;
		}
	}
	if (GOXIO_UNLIKELY(goxio_box_fd(fd))) {
		long r_;
		if (goxio_box_recvmsg(fd, msg, flags, &r_))
			return r_; /* from the socket's box, or the engine's receive that fills it (box.c) */
	}
	DATA_TRAMPOLINE(fd, GOXIO_OP_RECVMSG, REAL(recvmsg)(fd, msg, flags), msg, flags, 0, 0, 0);
}

int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags, struct timespec *timeout) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_SPILL) && v != NULL && !(flags & (MSG_ERRQUEUE | MSG_OOB))) {
		unsigned int k = 0;
		for (; k < n; k++) {
			struct msghdr *m = &v[k].msg_hdr;
			int mf_ = 0;
			long r_;
			if (!goxio_spill_recv(fd, m->msg_iov, m->msg_iovlen, flags & ~MSG_WAITFORONE, m->msg_name, &m->msg_namelen, &mf_, &r_))
				break;
			m->msg_flags = mf_;
			m->msg_controllen = 0;
			v[k].msg_len = (unsigned int)r_;
		}
		if (k > 0)
			return (int)k;
	}
	DATA_TRAMPOLINE(fd, GOXIO_OP_RECVMMSG, REAL(recvmmsg)(fd, v, n, flags, timeout), v, n, flags, timeout, 0);
}

/* SEND_COUNTED returns realcall's result, counted in the counters lookup returns, unless lookup
 * returns NULL (the caller goes on). */
#define SEND_COUNTED(lookup, realcall)                                                                     \
	do {                                                                                               \
		uint64_t *ctr_ = lookup;                                                                   \
		if (ctr_ != NULL) {                                                                        \
			ssize_t r_ = realcall;                                                             \
			goxio_ksend_count(ctr_, r_);                                                       \
			return r_;                                                                         \
		}                                                                                          \
	} while (0)

/* KSEND sends straight to the kernel when the engine said that the socket's destination (the
 * connected peer's for a call naming none) has no goxio receiver (ksend.c): the engine would make
 * the same call. One global load while no socket allows it. */
#define KSEND(fd, to, tolen, flags, realcall)                                                              \
	do {                                                                                               \
		if (GOXIO_UNLIKELY(__atomic_load_n(&goxio_ksend_fds, __ATOMIC_RELAXED) != 0) &&            \
		    (goxio_fd_flags(fd) & GOXIO_FD_ENGINE) && goxio_active())                              \
			SEND_COUNTED(goxio_ksend_counters(fd, to, tolen, flags), realcall);                \
	} while (0)

/* LAZY_KSEND sends straight to the kernel from a lazy UDP socket of a process without its engine
 * when no goxio socket is bound at the destination (lazy_ksend.c): no engine is loaded for it.
 * lookup is the goxio_lazy_ksend* call that answers. */
#define LAZY_KSEND(fd, lookup, realcall)                                                                   \
	do {                                                                                               \
		if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY))                                    \
			SEND_COUNTED(lookup, realcall);                                                    \
	} while (0)

/* RSEND appends the datagram to the ring of the socket's last ring destination when it is the
 * destination again (the connected peer's for a call naming none) and nothing the route depends
 * on changed (rsend.c): the engine would append the same record. One global load while no fd has
 * a route. RSEND_SEEN, after the engine served a send, notes the memory it read for the next
 * ones. */
#define RSEND(fd, buf, n, flags, to, tolen)                                                                \
	do {                                                                                               \
		if (GOXIO_UNLIKELY(__atomic_load_n(&goxio_rsend_fds, __ATOMIC_RELAXED) != 0) &&            \
		    (goxio_fd_flags(fd) & GOXIO_FD_ENGINE)) {                                              \
			long r_;                                                                           \
			if (goxio_rsend(fd, buf, n, flags, to, tolen, &r_))                                \
				return r_;                                                                 \
		}                                                                                          \
	} while (0)

#define RSEND_SEEN(r, buf, n, to, tolen)                                                                   \
	do {                                                                                               \
		if ((r) >= 0 && (__atomic_load_n(&goxio_rsend_fds, __ATOMIC_RELAXED) != 0 ||               \
				 __atomic_load_n(&goxio_ksend_fds, __ATOMIC_RELAXED) != 0))                \
			goxio_rsend_seen(buf, n, to, tolen);                                               \
	} while (0)

static inline ssize_t write_call(int fd, const void *buf, size_t n) {
	DATA_TRAMPOLINE(fd, GOXIO_OP_WRITE, REAL(write)(fd, buf, n), buf, n, 0, 0, 0);
}

ssize_t write(int fd, const void *buf, size_t n) {
	LAZY_KSEND(fd, goxio_lazy_ksend(fd, NULL, 0, 0), REAL(write)(fd, buf, n));
	RSEND(fd, buf, n, 0, NULL, 0);
	KSEND(fd, NULL, 0, 0, REAL(write)(fd, buf, n));
	ssize_t r = write_call(fd, buf, n);
	RSEND_SEEN(r, buf, n, NULL, 0);
	return r;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
	DATA_TRAMPOLINE(fd, GOXIO_OP_WRITEV, REAL(writev)(fd, iov, cnt), iov, cnt, 0, 0, 0);
}

static inline ssize_t send_call(int fd, const void *buf, size_t n, int flags) {
	DATA_TRAMPOLINE(fd, GOXIO_OP_SENDTO, REAL(send)(fd, buf, n, flags), buf, n, flags, 0, 0);
}

ssize_t send(int fd, const void *buf, size_t n, int flags) {
	LAZY_KSEND(fd, goxio_lazy_ksend(fd, NULL, 0, flags), REAL(send)(fd, buf, n, flags));
	RSEND(fd, buf, n, flags, NULL, 0);
	KSEND(fd, NULL, 0, flags, REAL(send)(fd, buf, n, flags));
	ssize_t r = send_call(fd, buf, n, flags);
	RSEND_SEEN(r, buf, n, NULL, 0);
	return r;
}


static inline ssize_t sendto_call(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr,
				  socklen_t alen) {
	DATA_TRAMPOLINE(fd, GOXIO_OP_SENDTO, REAL(sendto)(fd, buf, n, flags, addr, alen), buf, n, flags, addr, alen);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr, socklen_t alen) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(fd) & GOXIO_FD_LAZY) && goxio_late_sendto(fd, addr, alen, flags))
		return REAL(sendto)(fd, buf, n, flags, addr, alen); /* a plain socket from now on (late.c) */
	LAZY_KSEND(fd, goxio_lazy_ksend(fd, addr, alen, flags), REAL(sendto)(fd, buf, n, flags, addr, alen));
	RSEND(fd, buf, n, flags, addr, alen);
	KSEND(fd, addr, alen, flags, REAL(sendto)(fd, buf, n, flags, addr, alen));
	ssize_t r = sendto_call(fd, buf, n, flags, addr, alen);
	RSEND_SEEN(r, buf, n, addr, alen);
	return r;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
	LAZY_KSEND(fd, goxio_lazy_ksendmsg(fd, msg, flags), REAL(sendmsg)(fd, msg, flags));
	DATA_TRAMPOLINE(fd, GOXIO_OP_SENDMSG, REAL(sendmsg)(fd, msg, flags), msg, flags, 0, 0, 0);
}

int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags) {
	DATA_TRAMPOLINE(fd, GOXIO_OP_SENDMMSG, REAL(sendmmsg)(fd, v, n, flags), v, n, flags, 0, 0);
}

ssize_t sendfile(int out, int in, off_t *off, size_t count) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(in) & GOXIO_FD_INTERNAL)) {
		errno = EBADF;
		return -1;
	}
	DATA_TRAMPOLINE(out, GOXIO_OP_SENDFILE, REAL(sendfile)(out, in, off, count), in, off, count, 0, 0);
}

ssize_t sendfile64(int out, int in, off_t *off, size_t count) {
	if (GOXIO_UNLIKELY(goxio_fd_flags(in) & GOXIO_FD_INTERNAL)) {
		errno = EBADF;
		return -1;
	}
	DATA_TRAMPOLINE(out, GOXIO_OP_SENDFILE, REAL(sendfile64)(out, in, off, count), in, off, count, 0, 0);
}

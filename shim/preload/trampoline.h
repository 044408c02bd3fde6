/*
 * trampoline.h: the shape shared by the trampolines.
 */
#ifndef GOXIO_TRAMPOLINE_H
#define GOXIO_TRAMPOLINE_H

#include "preload.h"

/* TRAMPOLINE returns from the enclosing function: the real call for ordinary fds (one byte load),
 * EBADF for the library's own fds, the engine for its sockets while it is active. */
#define TRAMPOLINE(fd, op, realcall, a0, a1, a2, a3, a4)                                                  \
	do {                                                                                               \
		uint8_t fl_ = goxio_fd_flags(fd);                                                          \
		if (GOXIO_LIKELY(fl_ == 0))                                                                \
			return realcall;                                                                   \
		if (fl_ & GOXIO_FD_INTERNAL) {                                                             \
			errno = EBADF;                                                                     \
			return -1;                                                                         \
		}                                                                                          \
		if (GOXIO_UNLIKELY(fl_ & GOXIO_FD_LAZY))                                                   \
			fl_ = goxio_late_use(fd, fl_, op); /* a late TCP socket meets the engine (late.c) */ \
		if ((fl_ & GOXIO_FD_ENGINE) && goxio_active())                                             \
			return goxio_call(op, fd, (uintptr_t)(a0), (uintptr_t)(a1), (uintptr_t)(a2),       \
					  (uintptr_t)(a3), (uintptr_t)(a4));                               \
		return realcall;                                                                           \
	} while (0)

/* goxio_early_rflags: the flags argument of receive op (a0..a2 the trampoline's arguments). */
static inline int goxio_early_rflags(int op, uintptr_t a1, uintptr_t a2) {
	return op == GOXIO_OP_RECVFROM ? (int)a2 : op == GOXIO_OP_RECVMSG ? (int)a1 : 0;
}

/* EARLY_STEP: on a GOXIO_FD_LAZY fd, a connection or UDP socket in its early phase makes the data
 * call in the kernel, counted (early.c), and returns from the enclosing function; a blocking
 * receive of a UDP socket may poll first (goxio_early_wait). */
#define EARLY_STEP(fd, op, realcall, a1, a2)                                                               \
	do {                                                                                               \
		int e_ = goxio_early_enter(fd, op);                                                        \
		if (e_ != 0) {                                                                             \
			int rf_ = goxio_early_rflags(op, (uintptr_t)(a1), (uintptr_t)(a2));                \
			__typeof__(realcall) r_ = -1;                                                      \
			if (e_ != 1 || goxio_early_dir(op) != 1 || goxio_early_wait(fd, rf_) == 0)         \
				r_ = realcall;                                                             \
			if (e_ == 1) {                                                                     \
				int er_ = errno;                                                           \
				goxio_early_leave(fd, op, rf_, (long)r_);                                  \
				errno = er_;                                                               \
			}                                                                                  \
			return r_;                                                                         \
		}                                                                                          \
	} while (0)

/* goxio_data_flags returns the flags fl of fd as a data call sees them: on a socket made before
 * the engine was loaded (GOXIO_FD_LAZY), the first data call loads it, which adopts the socket
 * and changes its flags. Shared by DATA_TRAMPOLINE and the fortified CHK_TRAMPOLINE. */
static inline uint8_t goxio_data_flags(int fd, uint8_t fl) {
	if (GOXIO_UNLIKELY(fl & GOXIO_FD_LAZY)) {
		goxio_lazy_fd(fd);
		return goxio_fd_flags(fd);
	}
	return fl;
}

/* DATA_TRAMPOLINE is TRAMPOLINE for the calls that move data: on a socket made before the engine
 * was loaded (GOXIO_FD_LAZY), the first such call loads it, which adopts the socket. */
#define DATA_TRAMPOLINE(fd, op, realcall, a0, a1, a2, a3, a4)                                             \
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
		if ((fl_ & GOXIO_FD_ENGINE) && goxio_active())                                             \
			return goxio_call(op, fd, (uintptr_t)(a0), (uintptr_t)(a1), (uintptr_t)(a2),       \
					  (uintptr_t)(a3), (uintptr_t)(a4));                               \
		return realcall;                                                                           \
	} while (0)

/* goxio_fd_fresh is called with every fd a creating call returns: a flag left on that number means
 * the fd it described was closed behind the library's back (glibc-internal close, raw syscall),
 * so the stale bookkeeping is dropped before the number is used again. */
GOXIO_HIDDEN void goxio_fd_stale(int fd, uint8_t flags);
static inline void goxio_fd_fresh(int fd) {
	uint8_t fl = goxio_fd_flags(fd);
	if (GOXIO_UNLIKELY(fl != 0))
		goxio_fd_stale(fd, fl);
}

/* goxio_fd_gone drops the engine's bookkeeping of an fd the kernel has just closed or replaced. */
GOXIO_HIDDEN void goxio_fd_gone(int fd);

#endif

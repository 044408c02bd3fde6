/*
 * goxio.h: the C side of the interception layer.
 *
 * Every intercepted libc call is a trampoline that reads one byte of the fd table. A zero byte
 * (the common case) sends the call straight to the real libc function; a non-zero byte takes the
 * slow path: the library's own fds look closed (EBADF), sockets owned by the engine go into Go
 * (one cgo transition), but only while the Go engine is ready and the process is not a forked child.
 * Nothing on the fast path allocates, locks, or makes a system call of its own.
 */
#ifndef GOXIO_H
#define GOXIO_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#define GOXIO_LIKELY(x) __builtin_expect(!!(x), 1)
#define GOXIO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GOXIO_HIDDEN __attribute__((visibility("hidden")))

/* ---- real libc functions (real.c) ---- */

/* The real-function table: every symbol the library interposes, resolved once with
 * dlsym(RTLD_NEXT). Entries are filled by goxio_real_init() (thread-safe, idempotent). */
struct goxio_real {
	int (*socket)(int, int, int);
	int (*socketpair)(int, int, int, int[2]);
	int (*close)(int);
	int (*close_range)(unsigned int, unsigned int, int);
	void (*closefrom)(int);
	int (*shutdown)(int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*__read_chk)(int, void *, size_t, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*__recv_chk)(int, void *, size_t, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*__recvfrom_chk)(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*sendfile64)(int, int, off_t *, size_t);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*__poll_chk)(struct pollfd *, nfds_t, int, size_t);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*__ppoll_chk)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t);
	int (*epoll_create)(int);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
	int (*fcntl)(int, int, ...);
	int (*fcntl64)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fclose)(void *);
	int (*open)(const char *, int, ...);
	int (*open64)(const char *, int, ...);
	int (*openat)(int, const char *, int, ...);
	int (*openat64)(int, const char *, int, ...);
	int (*creat)(const char *, mode_t);
	int (*pipe)(int[2]);
	int (*pipe2)(int[2], int);
	int (*eventfd)(unsigned int, int);
	pid_t (*fork)(void);
	pid_t (*vfork)(void);
	int (*daemon)(int, int);
	int (*posix_spawn)(pid_t *, const char *, const void *, const void *, char *const[], char *const[]);
	int (*posix_spawnp)(pid_t *, const char *, const void *, const void *, char *const[], char *const[]);
	int (*system)(const char *);
	void *(*popen)(const char *, const char *);
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	sighandler_t (*signal)(int, sighandler_t);
	long (*syscall)(long, ...);
};

GOXIO_HIDDEN extern struct goxio_real goxio_real;
GOXIO_HIDDEN void goxio_real_init(void);

/* REAL(name) is the real libc function, resolving the table on first use. */
#define REAL(name) (GOXIO_LIKELY(goxio_real.name != NULL) ? goxio_real.name : (goxio_real_init(), goxio_real.name))

/* ---- fd table (fdtable.c) ---- */

/* Size of the C-side fd table; fds at or above it are always passed through. */
#define GOXIO_FDT_SIZE (1u << 20)

/* Flags of a table byte. */
enum {
	GOXIO_FD_ENGINE = 1,   /* a socket object of the engine: every call on the fd enters Go */
	GOXIO_FD_INTERNAL = 2, /* the library's own fd: invisible to the program (EBADF) */
	GOXIO_FD_WATCH = 4,    /* passed through, but close/dup2 onto it tell the engine (stats slot) */
	GOXIO_FD_RING = 8,     /* a socket whose readiness is partly in user-space rings: select, poll
				  and epoll_ctl on it enter the engine */
	GOXIO_FD_EPOLL = 16,   /* an epoll fd with ring sockets in it: epoll_wait enters the engine */
	GOXIO_FD_SPILL = 32,   /* a socket whose ring datagrams were spilled at a fork (spill.c): its
				  receives take them first, in the parent and in the child */
};

/* goxio_fdt_tag is the epoll data the engine registers an inner epoll fd with in a program's epoll
 * set: an address inside the table, which no program datum can equal. */
GOXIO_HIDDEN int goxio_is_tag(uint64_t data);
uint64_t goxio_fdt_tag(int fd);

GOXIO_HIDDEN extern volatile uint8_t goxio_fdt[GOXIO_FDT_SIZE];

/* goxio_fd_flags is the fast-path check: one byte load, no fence. */
static inline uint8_t goxio_fd_flags(int fd) {
	if (GOXIO_UNLIKELY((unsigned)fd >= GOXIO_FDT_SIZE))
		return 0;
	return __atomic_load_n(&goxio_fdt[fd], __ATOMIC_RELAXED);
}

void goxio_fdt_set(int fd, int flags);

/* ---- datagrams spilled at a fork (spill.c) ---- */

/* goxio_spill_set gives fd (one of the fds of a socket) the spill region the engine made of its
 * ring datagrams before a fork, and flags it GOXIO_FD_SPILL. */
void goxio_spill_set(int fd, void *region);
/* goxio_spill_any is non-zero once some fd was given a spill region. */
GOXIO_HIDDEN extern int goxio_spill_any;
/* goxio_spill_ready reports whether fd is spill-flagged and its region still holds a datagram (a
 * receive would take it): select and poll report it readable (calls_iomux.c). */
GOXIO_HIDDEN int goxio_spill_ready(int fd);
/* goxio_spill_recv serves a receive on a spill-flagged fd from its region: 1 with *ret set when a
 * spilled datagram was taken (or peeked), 0 when the region is empty (the caller goes on). */
GOXIO_HIDDEN int goxio_spill_recv(int fd, const struct iovec *iov, size_t iovcnt, int flags, void *name,
				  socklen_t *namelen, int *msgflags, long *ret);
int goxio_fdt_get(int fd);
GOXIO_HIDDEN int goxio_fdt_high(void);

/* goxio_fdt_reserve grows the fd table to hold the Go runtime's netpoller high (fdtable.c). */
GOXIO_HIDDEN void goxio_fdt_reserve(void);

/* Internal fds (log file, stderr copy): placed high, invisible, relocated when the program
 * dup2()s onto one. The variable pointed to is the fd's owner and is updated atomically. */
int goxio_internal_adopt(int fd, int *owner);
GOXIO_HIDDEN int goxio_internal_relocate(int fd);

/* ---- lifecycle (lifecycle.c) ---- */

/* goxio_active reports whether calls may enter Go: the engine is ready and this process is not
 * a forked child of the one that started it (the Go runtime does not survive fork). */
GOXIO_HIDDEN int goxio_active(void);
void goxio_set_ready(int ready);
int goxio_main_is_go(void);
int goxio_is_forked_child(void);
void goxio_restore_sigmask(void);

/* ---- signals (signal.c) ---- */

/* Per-thread counts of the program's signal handlers that ran on the thread: all of them, and
 * those without SA_RESTART. */
struct goxio_sig_counters {
	unsigned int all;
	unsigned int interrupting;
};
struct goxio_sig_counters *goxio_sig_counters(void);
GOXIO_HIDDEN int goxio_is_sig_tramp(uintptr_t handler);
GOXIO_HIDDEN void goxio_block_async_signals(void);

/* ---- the boundary into Go (calls.c) ---- */

/* Operation codes passed to the engine's single entry point. Kept in sync with offload/op.go
 * (a test compares them). */
enum goxio_op {
	GOXIO_OP_SOCKET = 1, /* a0=domain a1=type a2=protocol: the kernel socket exists as fd */
	GOXIO_OP_CLOSE,
	GOXIO_OP_SHUTDOWN,
	GOXIO_OP_BIND,
	GOXIO_OP_LISTEN,
	GOXIO_OP_ACCEPT4,
	GOXIO_OP_CONNECT,
	GOXIO_OP_GETSOCKNAME,
	GOXIO_OP_GETPEERNAME,
	GOXIO_OP_SETSOCKOPT,
	GOXIO_OP_GETSOCKOPT,
	GOXIO_OP_READ,
	GOXIO_OP_READV,
	GOXIO_OP_RECVFROM,
	GOXIO_OP_RECVMSG,
	GOXIO_OP_RECVMMSG,
	GOXIO_OP_WRITE,
	GOXIO_OP_WRITEV,
	GOXIO_OP_SENDTO,
	GOXIO_OP_SENDMSG,
	GOXIO_OP_SENDMMSG,
	GOXIO_OP_SENDFILE,
	GOXIO_OP_FCNTL,
	GOXIO_OP_IOCTL,
	GOXIO_OP_DUP,   /* a0 = new fd made by the kernel (dup, dup2, dup3, F_DUPFD): register it */
	GOXIO_OP_FORGET, /* the fd was closed or replaced outside the engine: drop bookkeeping */
	GOXIO_OP_POLL,   /* fd -1; a0=pollfd* a1=nfds a2=timespec* or 0 (forever) a3=sigmask* or 0
			    a4=the thread's struct goxio_sig_counters* */
	GOXIO_OP_SELECT, /* fd -1; a0=nfds a1..a3=fd_set* a4=struct goxio_select_args* */
	GOXIO_OP_EPOLL_CTL,  /* fd = target; a0=epfd a1=op a2=epoll_event* */
	GOXIO_OP_EPOLL_WAIT, /* fd = epfd; a0=events a1=maxevents a2=timespec* or 0 a3=sigmask* or 0
				a4=the thread's struct goxio_sig_counters* */
	GOXIO_OP_MAX
};

/* The rest of select's arguments: tv (select, updated with the time left as Linux does) or ts
 * (pselect), and pselect's signal mask. */
struct goxio_select_args {
	struct timeval *tv;
	const struct timespec *ts;
	const sigset_t *mask;
	struct goxio_sig_counters *sig;
};

/* goxio_call enters the engine and turns its result into the C convention: a negative result is
 * -errno, returned as -1 with errno set; otherwise errno is left untouched. */
GOXIO_HIDDEN long goxio_call(int op, int fd, uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3,
			     uintptr_t a4);

/* goxio_quiet_threads: how many threads may call into the engine before goxio_go_threads gives
 * the runtime's monitor thread its normal priority back (boundary.c). */
GOXIO_HIDDEN extern int goxio_quiet_threads;

#endif

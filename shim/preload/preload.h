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
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "../goxio.h"

#define GOXIO_LIKELY(x) __builtin_expect(!!(x), 1)
#define GOXIO_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- real libc functions (real.c) ---- */

/* The real-function table: every symbol the library interposes, resolved with dlsym(RTLD_NEXT),
 * each at its first use (real.c), all at once by goxio_real_init() (thread-safe, idempotent). */
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
	int (*execve)(const char *, char *const[], char *const[]);
	void *(*popen)(const char *, const char *);
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	sighandler_t (*signal)(int, sighandler_t);
	long (*syscall)(long, ...);
	int (*pthread_getattr_np)(pthread_t, pthread_attr_t *);
	void (*siglongjmp)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
	void (*longjmp)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
	void (*_longjmp)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
	void (*__longjmp_chk)(struct __jmp_buf_tag *, int) __attribute__((noreturn));
};

/* GOXIO_COLD places a large, rarely written zero-initialized array after every other variable of
 * the library (x86-64's .lbss, which the linker puts after .bss). Every process the library is
 * preloaded into faults in each page of ours it writes: kept together, the small variables every
 * process touches (the real functions' table, the loader's state, the fd table's first entries)
 * share one or two pages instead of lying between these arrays over a dozen. */
#if defined(__x86_64__)
#define GOXIO_COLD __attribute__((section(".lbss")))
#else
#define GOXIO_COLD
#endif

GOXIO_HIDDEN extern struct goxio_real goxio_real;
GOXIO_HIDDEN void goxio_real_init(void);
GOXIO_HIDDEN void *goxio_real_resolve(void **slot, const char *name);

/* REAL(name) is the real libc function, resolved on first use. */
#define REAL(name)                                                                                         \
	(GOXIO_LIKELY(goxio_real.name != NULL)                                                             \
		 ? goxio_real.name                                                                         \
		 : (__typeof__(goxio_real.name))goxio_real_resolve((void **)&goxio_real.name, #name))

/* ---- fd table (fdtable.c) ---- */

/* goxio_fdt_tag is the epoll data the engine registers an inner epoll fd with in a program's epoll
 * set: an address inside the table, which no program datum can equal. */
GOXIO_HIDDEN int goxio_is_tag(uint64_t data);
GOXIO_HIDDEN uint64_t goxio_fdt_tag(int fd);

GOXIO_HIDDEN extern volatile uint8_t goxio_fdt[GOXIO_FDT_SIZE];

/* goxio_fd_flags is the fast-path check: one byte load, no fence. */
static inline uint8_t goxio_fd_flags(int fd) {
	if (GOXIO_UNLIKELY((unsigned)fd >= GOXIO_FDT_SIZE))
		return 0;
	return __atomic_load_n(&goxio_fdt[fd], __ATOMIC_RELAXED);
}

GOXIO_HIDDEN void goxio_fdt_set(int fd, int flags);

/* ---- datagrams spilled at a fork (spill.c) ---- */

/* goxio_spill_set gives fd (one of the fds of a socket) the spill region the engine made of its
 * ring datagrams before a fork, and flags it GOXIO_FD_SPILL. */
GOXIO_HIDDEN void goxio_spill_set(int fd, void *region);
/* goxio_spill_any is non-zero once some fd was given a spill region. */
GOXIO_HIDDEN extern int goxio_spill_any;
/* goxio_spill_ready reports whether fd is spill-flagged and its region still holds a datagram (a
 * receive would take it): select and poll report it readable (calls_iomux.c). */
GOXIO_HIDDEN int goxio_spill_ready(int fd);
/* goxio_spill_pending reports whether some spill-flagged fd still holds a datagram. */
GOXIO_HIDDEN int goxio_spill_pending(void);
/* goxio_spill_region identifies the spill region of fd (NULL: none). */
GOXIO_HIDDEN const void *goxio_spill_region(int fd);
/* goxio_spill_epoll answers an epoll wait on epfd whose members hold spilled datagrams
 * (spill_epoll.c): the number of events, or -1 with errno, after a look at the set that does not
 * wait (wait0); GOXIO_SPILL_NONE when no member of the set holds any (the caller waits itself). */
#define GOXIO_SPILL_NONE (-2)
GOXIO_HIDDEN int goxio_spill_epoll(int epfd, struct epoll_event *ev, int n, int (*wait0)(int, struct epoll_event *, int, const sigset_t *),
				   const sigset_t *mask);
/* goxio_spill_recv serves a receive on a spill-flagged fd from its region: 1 with *ret set when a
 * spilled datagram was taken (or peeked), 0 when the region is empty (the caller goes on). */
GOXIO_HIDDEN int goxio_spill_recv(int fd, const struct iovec *iov, size_t iovcnt, int flags, void *name,
				  socklen_t *namelen, int *msgflags, long *ret);
GOXIO_HIDDEN int goxio_fdt_get(int fd);
GOXIO_HIDDEN int goxio_fdt_high(void);

/* goxio_fdt_reserve grows the fd table to hold the Go runtime's netpoller high, given the
 * process's RLIMIT_NOFILE (fdtable.c). */
GOXIO_HIDDEN void goxio_fdt_reserve(const struct rlimit *nofile);

/* Internal fds (log file, stderr copy): placed high, invisible, relocated when the program
 * dup2()s onto one. The variable pointed to is the fd's owner and is updated atomically. */
GOXIO_HIDDEN int goxio_internal_adopt(int fd, int *owner);
GOXIO_HIDDEN int goxio_internal_relocate(int fd);

/* ---- sends to destinations without a goxio receiver (ksend.c) ---- */

/* GOXIO_KSEND_FLAGS: the send flags a send that skips the engine may carry. */
#define GOXIO_KSEND_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_CONFIRM)
/* goxio_vma_api_used: not 0 once the program was handed VMA's extra API (vma_extra.c). */
GOXIO_HIDDEN extern volatile int goxio_vma_api_used;

GOXIO_HIDDEN uint32_t *goxio_ksend_setup(const uint64_t *gen, const uint64_t *capture, uint64_t *plain);
GOXIO_HIDDEN void goxio_ksend_put(const struct sockaddr *dst, socklen_t len, uint64_t gen);
/* goxio_ksend_put_tcp: no goxio TCP socket listens at dst at generation gen, or (goxio) one does
 * (late.c reads the first: goxio_ksend_no_listener; early.c the second:
 * goxio_ksend_goxio_listener). goxio_ksend_ready: the cache is set up. goxio_ksend_capturing:
 * not set up, or goxio capture may be attached (which records early kernel bytes through the
 * engine's taps). */
GOXIO_HIDDEN void goxio_ksend_put_tcp(const struct sockaddr *dst, socklen_t len, uint64_t gen, int goxio);
GOXIO_HIDDEN int goxio_ksend_no_listener(const struct sockaddr *dst, socklen_t len);
GOXIO_HIDDEN int goxio_ksend_goxio_listener(const struct sockaddr *dst, socklen_t len);
GOXIO_HIDDEN int goxio_ksend_capturing(void);
/* goxio_ksend_no_receiver: a send with flags to dst (read only on a page a send of this thread
 * read before) would go to the kernel: no goxio socket is bound there (cached), no capture. */
GOXIO_HIDDEN int goxio_ksend_no_receiver(const struct sockaddr *dst, socklen_t len, int flags);
/* goxio_ksend_no_receiver_at: no goxio socket is bound at dst (cached; the caller read dst safely). */
GOXIO_HIDDEN int goxio_ksend_no_receiver_at(const struct sockaddr *dst, socklen_t len);
GOXIO_HIDDEN int goxio_ksend_ready(void);
GOXIO_HIDDEN void goxio_ksend_fd(int fd, uint64_t *counters);
GOXIO_HIDDEN void goxio_ksend_drop(int fd);
/* goxio_ksend_peer records fd's connected peer (NULL: none): sends naming no destination take
 * the shortcut when it is a cached destination. goxio_ksend_drop forgets it too. */
GOXIO_HIDDEN void goxio_ksend_peer(int fd, const struct sockaddr *peer, socklen_t len);
/* goxio_ksend_fds counts the fds that may take the shortcut: sendto looks only while it is not 0. */
GOXIO_HIDDEN extern volatile int goxio_ksend_fds;
/* goxio_ksend_page_key is the cache's key of dst (goxio_ksend_key) when dst is a sockaddr_in or
 * sockaddr_in6 on the page of the last destination address a send of this thread read safely; 0
 * otherwise (no system call: any other address answers 0). */
GOXIO_HIDDEN uint64_t goxio_ksend_page_key(const struct sockaddr *dst, socklen_t len);
/* goxio_ksend_gen_is: the engine's discovery directory is at generation gen. */
GOXIO_HIDDEN int goxio_ksend_gen_is(uint64_t gen);

/* ---- sends into a goxio receiver's ring without the engine (rsend.c) ---- */

/* goxio_rsend serves a send of n bytes at buf with flags to `to` (NULL: the connected peer) on
 * fd from the route the engine left for fd: 1 with *ret set, 0 when the engine must serve it.
 * goxio_rsend_seen: a send of this thread through the engine read n bytes at buf and the
 * destination at to (both readable now). goxio_rsend_fds counts the fds with a route: the
 * trampolines look only while it is not 0. */
GOXIO_HIDDEN int goxio_rsend(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tolen,
			     long *ret);
GOXIO_HIDDEN void goxio_rsend_seen(const void *buf, size_t n, const struct sockaddr *to, socklen_t tolen);
GOXIO_HIDDEN void goxio_rsend_set(int fd, const struct goxio_txroute *route, const struct sockaddr *dst, socklen_t len);
GOXIO_HIDDEN void goxio_rsend_drop(int fd);
GOXIO_HIDDEN extern volatile int goxio_rsend_fds;

/* goxio_fd_slots: an object of size bytes per fd, made on demand (chunks of GOXIO_FD_SLOTS_CHUNK
 * pointers, then the object, both zeroed) and never freed (fdslots.c); chunks is an array of
 * GOXIO_FD_SLOTS chunk pointers (zeroed: GOXIO_COLD memory). goxio_fd_slot returns fd's object,
 * making it with make (NULL when there is none, or no memory); lock-free when it exists. */
#define GOXIO_FD_SLOTS_CHUNK 1024
#define GOXIO_FD_SLOTS (GOXIO_FDT_SIZE / GOXIO_FD_SLOTS_CHUNK)
struct goxio_fd_slots {
	void ***chunks;
	size_t size;
	pthread_mutex_t mu;
};
GOXIO_HIDDEN void *goxio_fd_slot(struct goxio_fd_slots *t, int fd, int make);

/* goxio_pages: a thread's set of the program's pages (number + 1; 0: none) that the engine read
 * or wrote for it, the most recent GOXIO_PAGES of them (box.c's receives, rsend.c's sends). A
 * program that uses the same buffer finds its pages here from its second call on. A page the
 * program unmaps or protects after the engine used it is the one case where the library's own
 * copy faults where the kernel would answer EFAULT: the program then passed memory it had given
 * up (ksend.c reads destination addresses under the same rule). */
#define GOXIO_PAGES 8
struct goxio_pages {
	uintptr_t page[GOXIO_PAGES];
	unsigned next;
};
/* goxio_pages_ok: every page of p..p+len is in s; goxio_pages_note: they are now. */
GOXIO_HIDDEN int goxio_pages_ok(const struct goxio_pages *s, const void *p, size_t len);
GOXIO_HIDDEN void goxio_pages_note(struct goxio_pages *s, const void *p, size_t len);
/* goxio_dest_group reports a destination every joined or bound socket may receive: a multicast
 * or broadcast address (IPv4, IPv4-mapped or IPv6). */
GOXIO_HIDDEN int goxio_dest_group(const struct sockaddr *sa);
/* goxio_clock_ns reads clock c (CLOCK_MONOTONIC, or its _COARSE variant where a tick's precision
 * does) in nanoseconds. */
static inline uint64_t goxio_clock_ns(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* goxio_sa_port is the port of sa, a sockaddr_in or sockaddr_in6 (read safely before), in host
 * order. */
static inline uint16_t goxio_sa_port(const struct sockaddr *sa) {
	return ntohs(sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_port
					      : ((const struct sockaddr_in6 *)sa)->sin6_port);
}
/* goxio_dir_udp_port_used reports whether an entry of the discovery directory mapped at mem that
 * is not a listener's has port (any address; half written entries count), from a summary kept for
 * the directory's generation (*gen, when not NULL, gets the one it answers for). */
GOXIO_HIDDEN int goxio_dir_udp_port_used(const volatile uint64_t *mem, uint16_t port, uint64_t *gen);
/* goxio_ksend_learn caches dst (len bytes, read safely before) as a destination without a goxio
 * receiver when no UDP entry of the engine's directory has its port (as the engine's look-up at
 * a send would). */
GOXIO_HIDDEN void goxio_ksend_learn(const struct sockaddr *dst, socklen_t len);
/* goxio_ksend_counters returns fd's counters when a send to `to` with flags may go straight to the
 * kernel (the engine would only make the same call), NULL when the engine must decide. */
GOXIO_HIDDEN uint64_t *goxio_ksend_counters(int fd, const struct sockaddr *to, socklen_t len, int flags);
/* goxio_ksend_seen notes that a send of this thread read the destination address `to` without
 * fault: later shortcuts may read addresses on its page. */
GOXIO_HIDDEN void goxio_ksend_seen(const struct sockaddr *to, socklen_t len);
/* goxio_ksend_count counts a shortcut send's result r, called right after the send (errno is
 * still the send's when r < 0). */
GOXIO_HIDDEN void goxio_ksend_count(uint64_t *ctr, long r);
/* goxio_ksend_rang tells the engine's next spin that a ring send of the trampoline rang a
 * doorbell (a thread may be queued on this CPU: it looks at the crowd, wait.Woke). */
GOXIO_HIDDEN void goxio_ksend_rang(void);
/* goxio_ksend_known: dst is in the cache (as a UDP destination, or with tcp one no goxio TCP
 * socket listens at) for the current generation of the directory whose generation word is gen
 * (the caller read dst safely). */
GOXIO_HIDDEN int goxio_ksend_known(const volatile uint64_t *gen, const struct sockaddr *dst, socklen_t len, int tcp);
/* goxio_ksend_key is the cache's key of dst (len bytes, readable; 0: none it takes). */
GOXIO_HIDDEN uint64_t goxio_ksend_key(const struct sockaddr *dst, socklen_t len);
/* goxio_ksend_readable reports whether len bytes at p (on one page) can be read without a fault:
 * a page a send of this thread read before, or one the kernel reads now (process_vm_readv). */
GOXIO_HIDDEN int goxio_ksend_readable(const void *p, socklen_t len);

/* ---- UDP sends before the engine (lazy_ksend.c) ---- */

/* goxio_lazy_ksend returns the counters of fd, a lazy UDP socket of a process without its
 * engine, when its send with flags to `to` (NULL: its connected peer) goes to the kernel without
 * loading the engine: no goxio socket is bound at the destination. NULL: the caller goes on as
 * for any data call (which loads the engine). goxio_lazy_ksendmsg is the same for sendmsg. */
GOXIO_HIDDEN uint64_t *goxio_lazy_ksend(int fd, const struct sockaddr *to, socklen_t len, int flags);
/* goxio_lazy_recv_plain: 1 when fd is a lazy UDP socket of a process without its engine whose
 * sends all went to the kernel (lazy_ksend.c) and that was not bound explicitly: it is plain now,
 * and the receive op (-1: a wait) goes to the kernel. */
GOXIO_HIDDEN int goxio_lazy_recv_plain(int fd, int op);
/* GOXIO_LAZY_BOUND, a C-only bit of goxio_lazy_info.how: the program bound the lazy socket. */
#define GOXIO_LAZY_BOUND 0x00080000u
GOXIO_HIDDEN uint64_t *goxio_lazy_ksendmsg(int fd, const struct msghdr *msg, int flags);
/* goxio_lazy_connect_plain is called when connect on fd, a lazy socket of a process without its
 * engine, succeeded or is in progress with addr (which the kernel read): a TCP socket with no goxio
 * listener there, or a UDP socket with no goxio socket bound there, is made plain for good (as the
 * engine would keep it on the kernel: late.c does the same once it is loaded); 1 when it was. */
GOXIO_HIDDEN int goxio_lazy_connect_plain(int fd, const struct sockaddr *addr, socklen_t len);

/* ---- lifecycle (lifecycle.c) ---- */

/* goxio_active reports whether calls may enter Go: the engine is ready and this process is not
 * a forked child of the one that started it (the Go runtime does not survive fork). */
GOXIO_HIDDEN int goxio_active(void);
GOXIO_HIDDEN void goxio_set_ready(int ready);
GOXIO_HIDDEN int goxio_main_is_go(void);
GOXIO_HIDDEN int goxio_is_forked_child(void);
GOXIO_HIDDEN void goxio_mark_child(void);

/* ---- signals (signal.c) ---- */

GOXIO_HIDDEN struct goxio_sig_counters *goxio_sig_counters(void);
GOXIO_HIDDEN int goxio_is_sig_tramp(uintptr_t handler);
GOXIO_HIDDEN void goxio_block_async_signals(void);

/* goxio_sig_tls is this thread's struct goxio_sig_counters (signal.c). */
GOXIO_HIDDEN extern __thread __attribute__((tls_model("initial-exec"))) struct goxio_sig_counters goxio_sig_tls;

/* goxio_sig_depth counts the program's signal handlers running on this thread (signal.c). */
GOXIO_HIDDEN extern __thread __attribute__((tls_model("initial-exec"))) int goxio_sig_depth;

/* goxio_sig_defer counts what the thread is in that a program's signal handler must not run on
 * top of: calls into the engine (GOXIO_GO), a box's lock (box.c) and the VMA records' lock
 * (vma_records.c). A socket call in the handler would enter the engine again on the same thread,
 * which Go does not allow, or wait for the lock its own thread holds: a timer or SIGIO handler
 * that receives from a ring socket crashed the process ("exitsyscall: syscall frame is no longer
 * valid") or hung it. Such a handler is deferred (signal.c): goxio_sig_deferred_n is how many
 * wait, goxio_sig_undefer ends one hold and runs them after the last, as the kernel would have
 * (the handler's mask, SA_SIGINFO's information). */
GOXIO_HIDDEN extern __thread __attribute__((tls_model("initial-exec"))) int goxio_sig_defer;
GOXIO_HIDDEN extern __thread __attribute__((tls_model("initial-exec"))) int goxio_sig_deferred_n;
GOXIO_HIDDEN void goxio_sig_run_deferred(void);

/* goxio_sig_flush runs the deferred handlers when nothing holds them: no reason left, and no handler
 * running (they run after it, as the kernel delivers a signal once the handler's mask is lifted). */
static inline void goxio_sig_flush(void) {
	if (GOXIO_UNLIKELY(goxio_sig_deferred_n != 0) && goxio_sig_defer == 0 && goxio_sig_depth == 0)
		goxio_sig_run_deferred();
}

static inline void goxio_sig_undefer(void) {
	goxio_sig_defer--;
	goxio_sig_flush();
}

/* goxio_sig_keep_mask and goxio_sig_put_mask bracket a call into the engine from a program's
 * handler: the Go runtime sets the thread's signal mask when a call from C enters it, which
 * unblocked what the kernel blocks while the handler runs (its own signal, sa_mask). */
GOXIO_HIDDEN void goxio_sig_keep_mask(sigset_t *old);
GOXIO_HIDDEN void goxio_sig_put_mask(const sigset_t *old);

/* goxio_sig_enter notes the thread's signal counters as the call enters the engine, before the
 * deferral starts: a handler that runs after this (at once, or deferred) came during the call,
 * and ends its wait as the kernel's would (wait.Call). */
static inline void goxio_sig_enter(void) {
	goxio_sig_tls.entry_all = goxio_sig_tls.all;
	goxio_sig_tls.entry_interrupting = goxio_sig_tls.interrupting;
	goxio_sig_tls.entry_deferred = goxio_sig_tls.deferred;
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the handlers that read and write them run on this thread */
}

/* GOXIO_GO(stmt) runs stmt, a call into the engine, with the program's handlers deferred (and,
 * inside a handler, the thread's signal mask kept). */
#define GOXIO_GO(stmt)                                                                                     \
	do {                                                                                               \
		sigset_t gm_;                                                                              \
		int gh_ = goxio_sig_depth > 0;                                                             \
		if (GOXIO_UNLIKELY(gh_))                                                                   \
			goxio_sig_keep_mask(&gm_);                                                         \
		goxio_sig_enter();                                                                         \
		goxio_sig_defer++;                                                                         \
		stmt;                                                                                      \
		if (GOXIO_UNLIKELY(gh_))                                                                   \
			goxio_sig_put_mask(&gm_);                                                          \
		goxio_sig_undefer();                                                                       \
	} while (0)

/* ---- the boundary into Go (calls.c) ---- */

/* goxio_call enters the engine and turns its result into the C convention: a negative result is
 * -errno, returned as -1 with errno set; otherwise errno is left untouched. */
GOXIO_HIDDEN long goxio_call(int op, int fd, uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3,
			     uintptr_t a4);

/* goxio_thread_engine_calls returns how many calls the calling thread made into the engine. It is
 * exported (default visibility) for tests, which find it with dlsym(RTLD_DEFAULT, ...) and check
 * that calls on a socket the kernel serves for good never enter the engine. */
unsigned long goxio_thread_engine_calls(void);

/* goxio_altstack_begin and goxio_altstack_end bracket every call into the engine (GOXIO_ENTER):
 * at a thread's first, they note the alternate signal stack the Go runtime installs (altstack.c). */
GOXIO_HIDDEN int goxio_altstack_begin(void);
GOXIO_HIDDEN void goxio_altstack_end(int before);
/* goxio_altstack_whole gives the thread back the whole alternate stack a handler that ran off it
 * had shrunk, when the handler was left by a jump (altstack.c). */
GOXIO_HIDDEN void goxio_altstack_whole(void);
/* goxio_sig_off_altstack runs fn(arg), a program's signal handler for the signal whose context is
 * ctx, off the thread's alternate signal stack when the signal put it there (altstack.c). */
GOXIO_HIDDEN void goxio_sig_off_altstack(void (*fn)(void *), void *arg, const void *ctx);
#define GOXIO_ENTER(stmt)                                                                                  \
	do {                                                                                               \
		int ab_ = goxio_altstack_begin();                                                          \
		GOXIO_GO(stmt);                                                                            \
		goxio_altstack_end(ab_);                                                                   \
	} while (0)

/* goxio_quiet_threads: how many threads may call into the engine before goxio_go_threads gives
 * the runtime's monitor thread its normal priority back (boundary.c). */
GOXIO_HIDDEN extern int goxio_quiet_threads;


/* ---- the engine, loaded on demand (loader.c) ---- */

/* goxio_eng holds the engine's entry points once it is loaded. */
GOXIO_HIDDEN extern struct goxio_engine goxio_eng;

/* goxio_engine_need loads the engine if it is not yet (once, thread-safely) and reports whether
 * calls may now enter it. It returns 0 without loading inside a signal handler, in a vfork child,
 * in a forked child of a process that has the engine, during the load on the loading thread, and
 * after the load failed (the reason said once on stderr). */
GOXIO_HIDDEN int goxio_engine_need(void);

/* goxio_engine_loaded reports whether this process ever started loading the engine. */
GOXIO_HIDDEN int goxio_engine_loaded(void);
/* goxio_alive_lost reports a forked child of a process that started loading the engine (a memory
 * read: lifecycle.c). */
GOXIO_HIDDEN int goxio_alive_lost(void);

/* goxio_lazy_fd is called by a data call or a wait on a GOXIO_FD_LAZY fd (or GOXIO_FD_LAZY_EPOLL
 * epoll fd): it loads the engine, which adopts the fd; the caller then reads the fd's flags again. */
GOXIO_HIDDEN void goxio_lazy_fd(int fd);

/* goxio_lazy_mark flags fd GOXIO_FD_LAZY (an inet socket the engine has not seen) and notes how
 * it came to be (how: GOXIO_LAZY_*, ref: the listener it was accepted on, peer: connect's
 * address); with the engine ready meanwhile, the engine adopts it at once. */
GOXIO_HIDDEN void goxio_lazy_mark(int fd, uint32_t how, int ref, const struct sockaddr *peer, socklen_t len);

/* goxio_lazy_waits reports whether a wait (select, poll, epoll) on fd, flagged GOXIO_FD_LAZY,
 * needs the engine: not for a listening socket, whose readiness is always the kernel's. */
GOXIO_HIDDEN int goxio_lazy_waits(int fd);

/* goxio_lazy_plain makes fd, a lazy socket, a plain kernel fd for good: no engine adopts it. */
GOXIO_HIDDEN void goxio_lazy_plain(int fd);

/* goxio_lazy_forget drops what the C side noted of fd (closed or replaced, or no engine will
 * ever adopt it), and withdraws its listener entry (lazy_listen.c). */
GOXIO_HIDDEN void goxio_lazy_forget(int fd);

/* GOXIO_LAZY_DIR_TRIED, a bit of goxio_lazy_info.how the C side alone uses (the engine ignores
 * it): this process tried to publish the listener fd in the discovery directory. */
#define GOXIO_LAZY_DIR_TRIED 0x40000000u

/* goxio_lazy_info_of returns fd's notes (make: map the table if it is not yet), or NULL. */
GOXIO_HIDDEN struct goxio_lazy_info *goxio_lazy_info_of(int fd, int make);

/* ---- TCP sockets that meet the engine late (late.c) ---- */

/* C-only bits of goxio_lazy_info.how for a TCP socket made while the engine is loaded, which the
 * engine has not seen yet (its domain, type and protocol in .ref): LATE until it is given to the
 * engine ("birth") or made plain; LATE_OPTS an option was set meanwhile; LATE_FL F_SETFL ran;
 * LATE_BIRTH a thread is giving it to the engine. */
/* The late socket's notes in goxio_lazy_info.ref: domain (8 bits), type (4 bits),
 * SOCK_NONBLOCK at socket() (bit 12), protocol (from bit 16). */
#define GOXIO_LATE_NONBLOCK (1 << 12)
#define GOXIO_LAZY_LATE 0x20000000u
#define GOXIO_LAZY_LATE_OPTS 0x10000000u
#define GOXIO_LAZY_LATE_FL 0x08000000u
#define GOXIO_LAZY_LATE_BIRTH 0x04000000u
/* C-only bits of goxio_lazy_info.how for lazy_ksend.c: TYPED the socket's type is known (noted
 * by socket(), or asked of the kernel for a lazy fd made otherwise), DGRAM it is a UDP socket
 * (else TCP). */
#define GOXIO_LAZY_TYPED 0x02000000u
#define GOXIO_LAZY_DGRAM 0x01000000u

/* goxio_late_mark notes fd, a new TCP socket, as late instead of telling the engine: 0 when it
 * may not be (not TCP, in a signal handler or a vfork child, no cache of destinations, VMA's
 * extra API handed out); the caller then tells the engine. */
GOXIO_HIDDEN int goxio_late_mark(int fd, int domain, int type, int protocol);
/* goxio_late_birth gives fd to the engine if it is late (or waits for the thread that does):
 * 1 when it was late. */
GOXIO_HIDDEN int goxio_late_birth(int fd);
/* goxio_late_use is goxio_late_birth for a trampoline holding fd's flags fl: the flags to go on
 * with. op: the trampoline's call (-1: none), which an early connection may make in the kernel. */
GOXIO_HIDDEN uint8_t goxio_late_use(int fd, uint8_t fl, int op);
/* goxio_late_mark_early is goxio_late_mark with early.c's notes: the EARLY_* bits, the listener
 * of an accepted connection and the time of its accept. */
GOXIO_HIDDEN int goxio_late_mark_early(int fd, int domain, int type, int protocol, uint32_t early, int listener,
				       uint64_t since);
/* goxio_late_type: late socket fd's type as socket() would give it now (SOCK_NONBLOCK from its
 * notes, or from the kernel once F_SETFL ran: how's LATE_FL). */
GOXIO_HIDDEN int goxio_late_type(int fd, const struct goxio_lazy_info *i, uint32_t how);
/* goxio_late_plain makes a late socket a plain kernel fd (nobody gives it to the engine any
 * more): 1 when it did. */
GOXIO_HIDDEN int goxio_late_plain(int fd);
/* goxio_late_connect: 1 when fd is late and its destination has no goxio listener (cached): fd
 * is plain now and the caller connects it in the kernel; 2 when a goxio listener is there
 * (cached): the caller connects in the kernel and calls goxio_early_connected; 3 when fd is a
 * connection in its early phase already: the caller connects in the kernel. Otherwise a late fd
 * is given to the engine first. */
GOXIO_HIDDEN int goxio_late_connect(int fd, const struct sockaddr *addr, socklen_t len);
/* goxio_late_seen notes that the kernel read connect's address (success or in progress). */
GOXIO_HIDDEN void goxio_late_seen(const struct sockaddr *addr, socklen_t len);
/* goxio_late_sendto: 1 when fd is a late UDP socket whose first data call is this send to a
 * destination without a goxio receiver (cached): fd is plain now and the caller sends in the
 * kernel. Otherwise a late fd is given to the engine first. */
GOXIO_HIDDEN int goxio_late_sendto(int fd, const struct sockaddr *to, socklen_t len, int flags);
/* goxio_late_option: 1 when setsockopt(level, name) on late fd may go to the kernel alone; any
 * other option gives the socket to the engine first. goxio_late_fcntl: the same for fcntl. */
GOXIO_HIDDEN int goxio_late_option(int fd, int level, int name);
GOXIO_HIDDEN int goxio_late_fcntl(int fd, int cmd, long arg);
/* goxio_late_plain_all makes every late socket plain (before a fork, vfork or spawn). */
GOXIO_HIDDEN void goxio_late_plain_all(void);
/* ---- TCP connections in their early phase (early.c) ---- */

#include "pairs.h"

/* C-only bits of goxio_lazy_info.how for a late TCP connection served in C until it may pair:
 * EARLY_ACC accepted on a listener the engine publishes (`ref`), EARLY_CON connected to a goxio
 * listener and registered in the pairing table (early.slot). */
#define GOXIO_LAZY_EARLY_ACC 0x00800000u
#define GOXIO_LAZY_EARLY_CON 0x00400000u
/* ... and the program shut it down for reading (SHUT_RD), for writing (SHUT_WR) meanwhile */
#define GOXIO_LAZY_EARLY_SHUT_RD 0x00200000u
#define GOXIO_LAZY_EARLY_SHUT_WR 0x00100000u

/* goxio_early_handing_fd: the fd this thread is handing to the engine (-1: none); the engine's
 * flag changes on it keep GOXIO_FD_LAZY until the hand-over ends (fdtable.c). */
GOXIO_HIDDEN extern __thread __attribute__((tls_model("initial-exec"))) int goxio_early_handing_fd;

/* goxio_early_setup and goxio_early_listener: goxio_host's (goxio.h). */
GOXIO_HIDDEN void goxio_early_setup(uint64_t *pairs, uint64_t start, int pair_after, uint64_t grace_ns, uint64_t *closed);
GOXIO_HIDDEN void goxio_early_listener(int fd, int domain);
/* goxio_early_spin: goxio_host's (goxio.h). goxio_early_wait is a blocking receive's step on fd,
 * a socket in its early phase, before the kernel's call (rflags: the receive's flags): it polls
 * the kernel socket a while where that pays (early_wait.c); -1 with errno EINTR when a signal
 * handler that ran meanwhile ends the call as the kernel's would have, else 0. */
GOXIO_HIDDEN void goxio_early_spin(int on);
GOXIO_HIDDEN int goxio_early_wait(int fd, int rflags);
/* goxio_early_unlisten forgets fd's listener mark (its engine flag went). */
GOXIO_HIDDEN void goxio_early_unlisten(int fd);
/* goxio_early_accept serves accept on fd, an engine listener marked early, in C: the new fd is
 * a late connection in its early phase. -2 when fd is not such a listener (the caller goes on). */
GOXIO_HIDDEN int goxio_early_accept(int fd, struct sockaddr *addr, socklen_t *len, int flags, int four);
/* goxio_early_wants: a goxio listener is at addr (cached; the caller read addr safely) and the
 * early phase may run: a late TCP connect there goes to the kernel, then goxio_early_connected
 * with its result registers the connection (late.c's goxio_late_connect answers 2). */
GOXIO_HIDDEN int goxio_early_wants(const struct sockaddr *addr, socklen_t len);
GOXIO_HIDDEN void goxio_early_connected(int fd, const struct sockaddr *addr, socklen_t len, int r);
/* goxio_early_enter is called by a data call (op) on a GOXIO_FD_LAZY fd: 0 when fd is not a
 * connection in its early phase, or it was given to the engine now (the caller goes on with the
 * fd's flags); 1 when the call goes to the kernel counted (the caller then calls
 * goxio_early_leave with its result and the receive's flags, rflags); 2 when it goes to the
 * kernel as a plain fd's. */
GOXIO_HIDDEN int goxio_early_enter(int fd, int op);
/* goxio_early_dir: 1 for a receive the early phase serves, 2 for a send, 0 for any other call. */
static inline int goxio_early_dir(int op) {
	switch (op) {
	case GOXIO_OP_READ:
	case GOXIO_OP_READV:
	case GOXIO_OP_RECVFROM:
	case GOXIO_OP_RECVMSG:
		return 1;
	case GOXIO_OP_WRITE:
	case GOXIO_OP_WRITEV:
	case GOXIO_OP_SENDTO:
	case GOXIO_OP_SENDMSG:
		return 2;
	}
	return 0;
}
GOXIO_HIDDEN void goxio_early_leave(int fd, int op, int rflags, long r);
/* goxio_early_shutdown: 1 when fd is a connection in its early phase: shutdown(how) goes to the
 * kernel, noted for the engine. */
GOXIO_HIDDEN int goxio_early_shutdown(int fd, int how);
/* goxio_early_kernel_op: op may go to the kernel on a connection in its early phase without
 * the engine (it reads only what the kernel knows). */
GOXIO_HIDDEN int goxio_early_kernel_op(int fd, int op);
/* goxio_early_hand gives the early connection fd (notes i, how read with LATE_BIRTH set by the
 * caller) to the engine; nopair: a data call may still be in the kernel. */
GOXIO_HIDDEN void goxio_early_hand(int fd, struct goxio_lazy_info *i, uint32_t how, int nopair);
/* goxio_early_forget drops what an early connection registered (the pairing entry), before its
 * notes are cleared. */
GOXIO_HIDDEN void goxio_early_forget(struct goxio_lazy_info *i, uint32_t how);
/* goxio_early_closed counts a connection closed in its early phase (notes i, before they go). */
GOXIO_HIDDEN void goxio_early_closed(const struct goxio_lazy_info *i);
/* goxio_late_count_plain counts a socket made plain without the engine (the statistics'). */
GOXIO_HIDDEN void goxio_late_count_plain(void);
/* goxio_early_is reports whether notes i are those of a late connection in its early phase. */
static inline int goxio_early_is(const struct goxio_lazy_info *i) {
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	return (how & (GOXIO_LAZY_EARLY_ACC | GOXIO_LAZY_EARLY_CON)) && (how & GOXIO_LAZY_LATE);
}

/* ---- UDP sockets in their early phase (early.c) ---- */

/* GOXIO_LAZY_EARLY_UDP, a C-only bit of goxio_lazy_info.how: a late UDP socket whose first call
 * was a sendto to a destination not known to have no goxio receiver; the destination is in
 * early.key (early.keyed: its length), its sends and receives go to the kernel until its
 * GOXIO_EARLY_UDP_CALLS-th data call. */
#define GOXIO_LAZY_EARLY_UDP 0x00040000u
#define GOXIO_EARLY_UDP_CALLS 3
/* GOXIO_LAZY_EARLY_GONE, C-only: a UDP socket made before the engine loaded (not late) left its
 * early phase: the engine adopts it (loader.c), its calls no longer go to the kernel counted. */
#define GOXIO_LAZY_EARLY_GONE 0x00020000u

/* goxio_lazy_early_send is lazy_ksend.c's step at a sendto to `to` (len bytes, read safely; a
 * destination that may have a goxio receiver) on the lazy UDP socket noted in i, in a process
 * without its engine: 1 when the send goes to the kernel, counted in i->tx (the socket starts or
 * stays in its early phase), 0 when the engine must load. */
GOXIO_HIDDEN int goxio_lazy_early_send(struct goxio_lazy_info *i, const struct sockaddr *to, socklen_t len);
/* goxio_lazy_early_is reports whether notes i are those of a socket made before the engine loaded
 * that is in its early phase. */
static inline int goxio_lazy_early_is(const struct goxio_lazy_info *i) {
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	return (how & GOXIO_LAZY_EARLY_UDP) && !(how & (GOXIO_LAZY_LATE | GOXIO_LAZY_LATE_BIRTH | GOXIO_LAZY_EARLY_GONE));
}
/* goxio_lazy_early_end ends the early phase of the socket noted in i before the engine adopts it:
 * 0 when it may (nothing of it is in the kernel now), 1 when a call of another thread is (a
 * receive asleep there would never see a ring datagram): the caller makes it plain instead. */
GOXIO_HIDDEN int goxio_lazy_early_end(struct goxio_lazy_info *i);

/* goxio_early_udp_is reports whether notes i are those of a late UDP socket in its early phase. */
static inline int goxio_early_udp_is(const struct goxio_lazy_info *i) {
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	return (how & GOXIO_LAZY_EARLY_UDP) && (how & GOXIO_LAZY_LATE);
}

/* goxio_early_udp_send is late.c's step at a sendto (flags, to: len bytes) of the late UDP socket
 * noted in i: 1 when the data trampoline serves it in the kernel (the socket starts or stays in
 * its early phase), 0 when the caller births it. */
GOXIO_HIDDEN int goxio_early_udp_send(struct goxio_lazy_info *i, const struct sockaddr *to, socklen_t len, int flags);

/* goxio_late_counter: where late.c counts the sockets it made plain (the statistics' global
 * counter; NULL: its own). */
GOXIO_HIDDEN void goxio_late_counter(uint64_t *word);

/* goxio_lazy_listen publishes fd, a lazy socket that listens, in the discovery directory for the
 * process whose engine is not loaded (lazy_listen.c); it does nothing where it cannot (signal
 * handler, vfork child, engine loaded or loading, transport off, any error). */
GOXIO_HIDDEN void goxio_lazy_listen(int fd);

/* goxio_dir_map returns the mapping of this process's discovery directory (its user, network
 * namespace and GOXIO_SHM_DIR), opening it on first use, or creating it when make is set; NULL
 * when there is none (errno ENOENT) or it cannot be used (dir_map.c). Never unmapped. */
GOXIO_HIDDEN volatile uint64_t *goxio_dir_map(int make);

/* goxio_lazy_listen_gone withdraws the entry goxio_lazy_listen wrote for fd, unless the engine
 * took it over or another process wrote it (a forked child's inherited fd). */
GOXIO_HIDDEN void goxio_lazy_listen_gone(int fd);

/* goxio_engine_absent reports whether this process has no engine, loaded or loading, and is no
 * vfork child: the C side then publishes lazy listeners itself. */
GOXIO_HIDDEN int goxio_engine_absent(void);

/* goxio_lazy_fork marks every lazy socket GOXIO_LAZY_FORKED (before a fork without the engine,
 * in the parent) or GOXIO_LAZY_CHILD (after it, in the child). */
GOXIO_HIDDEN void goxio_lazy_fork(uint32_t how);

/* goxio_lazy_fds counts the fds flagged GOXIO_FD_LAZY: select and poll look for them only while
 * it is not zero. */
GOXIO_HIDDEN extern volatile int goxio_lazy_fds;

/* goxio_in_engine reports whether address h lies in the engine's code (its signal handlers). */
GOXIO_HIDDEN int goxio_in_engine(uintptr_t h);
/* goxio_in_engine_loaded is goxio_in_engine once the load has ended (no dladdr: the loader's lock
 * may be held by the thread that loads it), 0 before. */
GOXIO_HIDDEN int goxio_in_engine_loaded(uintptr_t h);

/* goxio_self_name is the name the loader loaded this library under (loader.c); NULL: unknown. */
GOXIO_HIDDEN const char *goxio_self_name(void);

/* ---- messages (say.c) ---- */

/* goxio_join copies the n strings of parts one after the other into buf (cap bytes, cut to fit,
 * NUL-terminated) and returns the length. */
GOXIO_HIDDEN size_t goxio_join(char *buf, size_t cap, const char *const parts[], size_t n);
/* goxio_say_parts writes the n strings of parts, joined, on stderr in one write. */
GOXIO_HIDDEN void goxio_say_parts(const char *const parts[], size_t n);

/* ---- what a program imports (elfscan.c) ---- */

enum { GOXIO_ELF_OK = 0, GOXIO_ELF_KEEP = 1 };
/* how goxio_elf_scan reads: a program (else a library); its needed libraries only (else also
 * its imports) */
enum { GOXIO_ELF_EXE = 1, GOXIO_ELF_NEEDS_ONLY = 2 };

/* goxio_elf_scan reads the ELF object buf[0:len] as how says (GOXIO_ELF_EXE, ...):
 * GOXIO_ELF_OK when it imports none of the functions that keep the library (each of its needed
 * library names passed to need, which returns non-zero to give up), GOXIO_ELF_KEEP with *why set
 * (a static string, or the import's name inside buf) when it does or when it is not an object
 * this reading understands. */
GOXIO_HIDDEN int goxio_elf_scan(const unsigned char *buf, size_t len, int how, int (*need)(void *ctx, const char *name),
				void *ctx, const char **why);
/* goxio_ldcache_find calls each with every x86-64 path /etc/ld.so.cache (mapped at cache[0:len])
 * gives for the library name, until each returns non-zero: the number of paths, or -1 when the
 * cache is not understood or each gave up. */
GOXIO_HIDDEN int goxio_ldcache_find(const unsigned char *cache, size_t len, const char *name,
				    int (*each)(void *ctx, const char *path), void *ctx);

/* ---- vfork (vfork.c) ---- */

/* goxio_vfork_depth counts, on this thread, the vforks under way: the vfork wrapper raises it just
 * before the system call and lowers it in the parent once the call returned. A vfork child runs on
 * its parent thread's memory, TLS included, so it reads it non-zero for its whole life. */
GOXIO_HIDDEN extern __thread __attribute__((tls_model("initial-exec"))) int goxio_vfork_depth;

/* goxio_in_vfork reports a vfork child (or a parent thread between its vfork's entry and return,
 * which runs no program code): every call is pure passthrough then. Such a child shares its
 * parent's memory, so it writes no C-side state (fd table, lazy-socket notes, internal fds,
 * signal-handler records, spill cursors, loader state; exec.c's table of answers is the one
 * exception, made for it) and never loads or enters the engine; only
 * the slow paths (an fd with a flag, the creating and signal calls) ask, never the fast path. */
static inline int goxio_in_vfork(void) { return GOXIO_UNLIKELY(goxio_vfork_depth != 0); }

/* goxio_prefork is what fork, vfork and daemon do in the parent before the system call: a load
 * under way is waited for and the engine's shared-memory sockets go back to the kernel
 * (calls_process.c). */
GOXIO_HIDDEN void goxio_prefork(void);

#endif

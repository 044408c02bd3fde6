/*
 * late.c: TCP and UDP sockets that meet the engine late, in a process whose engine is loaded.
 *
 * A TCP connection to a peer without goxio is the kernel's for good: the engine's only work on it
 * is to find that out at connect (no goxio listener at the address in the discovery directory)
 * and then stay out of the way. Yet a connection per request (an HTTP/1.0 client, a health
 * check, an RPC client) paid a trip into Go at socket() and at connect, and the engine's
 * bookkeeping of a socket's birth and death. So, with the engine loaded and the cache of
 * destinations without goxio (ksend.c) set up, socket() for TCP only notes the socket here
 * (GOXIO_FD_LAZY, GOXIO_LAZY_LATE with its domain, type and protocol) and does not enter Go. Its
 * connect looks the address up in that cache (TCP entries, valid for one generation of the
 * directory; the engine fills them when its look-up at a connect finds no goxio listener): a hit
 * makes the fd a plain kernel fd before the kernel connects it, and no call on it ever enters Go.
 * A UDP socket is the same at a connect, and at a first send (sendto) to a destination where the
 * engine found no goxio socket bound (the UDP keys of that cache, the send's address read only on
 * a page a send of the thread read before): a resolver's socket per query, a client's socket per
 * request. It stays plain for good: its later sends to goxio sockets go through the kernel too,
 * which those sockets read as well (nobody can send to it through a ring: it is in no directory).
 *
 * Every other use makes the socket the engine's first ("birth": the socket() call the engine
 * would have seen, with the non-blocking flag and the options it follows as they are now), so
 * that the engine has seen every call that matters to it, as for a socket it saw made: bind,
 * listen, a connect that misses the cache, a data call, a wait, epoll_ctl, dup, shutdown, ioctl,
 * and options and fcntl commands other than those goxio_late_option and goxio_late_fcntl let
 * through (they change nothing the engine keeps, or what it reads back from the kernel at
 * birth). One thread births a socket; a thread that meets it meanwhile waits for the birth.
 * Before a fork, a vfork or a spawn every late socket becomes plain: the child shares it, so it
 * must never go to rings, and the parent's engine never saw it.
 */
#include "preload.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <string.h>


/* late_plain_words: the statistics segment's counter of sockets made plain (the engine's), or
 * late_plain_own when there is none. */
static uint64_t late_plain_own;
static uint64_t *volatile late_plain_word = &late_plain_own;

void goxio_late_counter(uint64_t *word) { late_plain_word = word != NULL ? word : &late_plain_own; }

void goxio_late_count_plain(void) { __atomic_add_fetch(late_plain_word, 1, __ATOMIC_RELAXED); }

/* late_page: the page of the last address a connect of this thread gave the kernel successfully.
 * connect reads an address here only on that page: any other goes to the engine, which reads
 * program memory with fault protection (a bad pointer is EFAULT, as from the kernel). A program
 * that connects in a loop from one buffer reads it here from its second connect on. */
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t late_page;

int goxio_late_mark(int fd, int domain, int type, int protocol) {
	return goxio_late_mark_early(fd, domain, type, protocol, 0, -1, 0);
}

int goxio_late_mark_early(int fd, int domain, int type, int protocol, uint32_t early, int listener, uint64_t since) {
	if (((type & 0xf) != SOCK_STREAM && (type & 0xf) != SOCK_DGRAM) || goxio_sig_depth != 0 || goxio_in_vfork() || !goxio_ksend_ready() ||
	    __atomic_load_n(&goxio_vma_api_used, __ATOMIC_RELAXED))
		return 0;
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 1);
	if (i == NULL)
		return 0;
	memset(i, 0, sizeof *i);
	i->ref = (int32_t)((unsigned)domain & 0xff) | (type & 0xf) << 8 | ((type & SOCK_NONBLOCK) ? GOXIO_LATE_NONBLOCK : 0) |
		 (int32_t)(((unsigned)protocol & 0xffff) << 16);
	i->early.slot = -1;
	i->early.listener = listener;
	i->early.since = since;
	__atomic_store_n(&i->how, GOXIO_LAZY_LATE | early, __ATOMIC_RELEASE);
	goxio_fdt_set(fd, goxio_fd_flags(fd) | GOXIO_FD_LAZY);
	return 1;
}

static struct goxio_lazy_info *late_info(int fd) {
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 0);
	if (i == NULL || !(__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & (GOXIO_LAZY_LATE | GOXIO_LAZY_LATE_BIRTH)))
		return NULL;
	return i;
}

int goxio_late_birth(int fd) {
	struct goxio_lazy_info *i = late_info(fd);
	if (i == NULL)
		return 0;
	if (goxio_sig_depth != 0 || goxio_in_vfork()) {
		/* A signal handler may have interrupted the thread giving the socket to the engine,
		 * which it must not wait for; a vfork child never enters Go. The socket stays the
		 * kernel's. */
		goxio_late_plain(fd);
		return 1;
	}
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	if (!(how & GOXIO_LAZY_LATE) ||
	    !__atomic_compare_exchange_n(&i->how, &how, (how & ~GOXIO_LAZY_LATE) | GOXIO_LAZY_LATE_BIRTH, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
		/* Another thread gives it to the engine: wait until it has (a few microseconds). An
		 * early connection's hand-over may give up (early.c): then it is late again. */
		while (__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & GOXIO_LAZY_LATE_BIRTH)
			sched_yield();
		if (__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & GOXIO_LAZY_LATE)
			return goxio_late_birth(fd);
		return 1;
	}
	if (how & (GOXIO_LAZY_EARLY_ACC | GOXIO_LAZY_EARLY_CON)) {
		/* A connection in its early phase: the engine takes it over with what happened. A
		 * data call still in the kernel (another thread) would leave its bytes uncounted: it
		 * then never pairs. */
		goxio_early_hand(fd, i, how, __atomic_load_n(&i->early.inflight, __ATOMIC_SEQ_CST) != 0);
		return 1;
	}
	if (how & GOXIO_LAZY_EARLY_UDP) {
		/* A UDP socket in its early phase: the engine takes it over with its sends. With a
		 * call of another thread in the kernel (a receive asleep there would never see a
		 * ring datagram) it is the kernel's for good instead: it is in no directory, nobody
		 * sends to it through a ring. */
		if (__atomic_load_n(&i->early.inflight, __ATOMIC_SEQ_CST) != 0) {
			__atomic_store_n(&i->how, how, __ATOMIC_SEQ_CST);
			if (goxio_late_plain(fd))
				goxio_late_count_plain();
			return 1;
		}
		goxio_early_hand(fd, i, how, 0);
		return 1;
	}
	int ref = i->ref, saved = errno;
	int domain = ref & 0xff, type = goxio_late_type(fd, i, how), protocol = (int)((unsigned)ref >> 16);
	if (goxio_active())
		goxio_call(GOXIO_OP_SOCKET, fd, (uintptr_t)domain, (uintptr_t)type, (uintptr_t)protocol,
			   (how & GOXIO_LAZY_LATE_OPTS) ? 1 : 0, 0);
	/* The engine's registration replaced the fd's flags; one it did not take is a plain fd. */
	uint8_t fl = goxio_fd_flags(fd);
	if (fl & GOXIO_FD_LAZY)
		goxio_fdt_set(fd, fl & ~GOXIO_FD_LAZY);
	__atomic_store_n(&i->how, 0, __ATOMIC_RELEASE);
	errno = saved;
	return 1;
}

int goxio_late_type(int fd, const struct goxio_lazy_info *i, uint32_t how) {
	int type = (i->ref >> 8) & 0xf, nonblock = i->ref & GOXIO_LATE_NONBLOCK;
	if (how & GOXIO_LAZY_LATE_FL) {
		int f = REAL(fcntl)(fd, F_GETFL);
		if (f >= 0)
			nonblock = f & O_NONBLOCK;
	}
	return nonblock ? type | SOCK_NONBLOCK : type;
}

uint8_t goxio_late_use(int fd, uint8_t fl, int op) {
	if (late_info(fd) == NULL || (op >= 0 && goxio_early_kernel_op(fd, op)))
		return fl;
	goxio_late_birth(fd);
	return goxio_fd_flags(fd);
}

int goxio_late_plain(int fd) {
	struct goxio_lazy_info *i = late_info(fd);
	if (i == NULL)
		return 0;
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	if (!(how & GOXIO_LAZY_LATE) ||
	    !__atomic_compare_exchange_n(&i->how, &how, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	goxio_early_forget(i, how);
	uint8_t fl = goxio_fd_flags(fd);
	if (fl & GOXIO_FD_LAZY)
		goxio_fdt_set(fd, fl & ~GOXIO_FD_LAZY);
	memset(i, 0, sizeof *i);
	return 1;
}

void goxio_late_seen(const struct sockaddr *addr, socklen_t len) {
	uintptr_t a = (uintptr_t)addr;
	if (addr != NULL && len >= (socklen_t)sizeof(struct sockaddr_in) && len <= (socklen_t)sizeof(struct sockaddr_in6) &&
	    a >> 12 == (a + len - 1) >> 12)
		late_page = a >> 12;
}

/* late_dgram reports whether the late socket noted in i is a datagram socket. */
static int late_dgram(const struct goxio_lazy_info *i) { return ((i->ref >> 8) & 0xf) == SOCK_DGRAM; }

int goxio_late_connect(int fd, const struct sockaddr *addr, socklen_t len) {
	struct goxio_lazy_info *i = late_info(fd);
	if (i == NULL)
		return 0;
	uintptr_t a = (uintptr_t)addr;
	/* A connection in its early phase connected again (a non-blocking connect's completion):
	 * the kernel answers (EISCONN, EALREADY, or 0). */
	if (__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & (GOXIO_LAZY_EARLY_CON | GOXIO_LAZY_EARLY_ACC))
		return 3;
	/* UDP: a socket connected where no goxio socket is bound can only talk with the kernel's
	 * sockets there; TCP: no goxio listener there. */
	if (addr != NULL && len >= (socklen_t)sizeof(struct sockaddr_in) && len <= (socklen_t)sizeof(struct sockaddr_in6) &&
	    a >> 12 == late_page && (a + len - 1) >> 12 == late_page &&
	    (late_dgram(i) ? goxio_ksend_no_receiver_at(addr, len) : goxio_ksend_no_listener(addr, len)) && goxio_late_plain(fd)) {
		goxio_late_count_plain();
		return 1;
	}
	/* TCP to a goxio listener: the connection's early phase is in C (early.c). */
	if (addr != NULL && !late_dgram(i) &&
	    len >= (socklen_t)sizeof(struct sockaddr_in) && len <= (socklen_t)sizeof(struct sockaddr_in6) &&
	    a >> 12 == late_page && (a + len - 1) >> 12 == late_page && goxio_early_wants(addr, len))
		return 2;
	goxio_late_birth(fd);
	return 0;
}

int goxio_late_sendto(int fd, const struct sockaddr *to, socklen_t len, int flags) {
	struct goxio_lazy_info *i = late_info(fd);
	if (i == NULL)
		return 0;
	if (late_dgram(i)) {
		if (!goxio_early_udp_is(i) && goxio_ksend_no_receiver(to, len, flags) && goxio_late_plain(fd)) {
			goxio_late_count_plain();
			return 1;
		}
		/* A UDP socket's early phase, from its first sendto on: the data trampoline serves it
		 * (early.c). */
		if (goxio_early_udp_send(i, to, len, flags))
			return 0;
	} else if (goxio_early_is(i)) {
		return 0; /* the data trampoline serves it (early.c) */
	}
	goxio_late_birth(fd);
	return 0;
}

int goxio_late_option(int fd, int level, int name) {
	struct goxio_lazy_info *i = late_info(fd);
	if (i == NULL)
		return 0;
	int ok = 0;
	if (level == SOL_SOCKET)
		ok = name == SO_REUSEADDR || name == SO_REUSEPORT || name == SO_KEEPALIVE || name == SO_RCVTIMEO ||
		     name == SO_SNDTIMEO || name == SO_LINGER || name == SO_BROADCAST;
	else if (level == IPPROTO_TCP)
		ok = name == TCP_NODELAY || name == TCP_KEEPIDLE || name == TCP_KEEPINTVL || name == TCP_KEEPCNT;
	if (!ok) {
		goxio_late_birth(fd);
		return 0;
	}
	/* The engine reads the options it follows from the kernel at birth (adoptOptions). */
	__atomic_fetch_or(&i->how, GOXIO_LAZY_LATE_OPTS, __ATOMIC_RELAXED);
	return 1;
}

int goxio_late_fcntl(int fd, int cmd, long arg) {
	struct goxio_lazy_info *i = late_info(fd);
	if (i == NULL)
		return 0;
	if (cmd == F_GETFL || cmd == F_GETFD || cmd == F_SETFD)
		return 1;
	if (cmd == F_SETFL && !(arg & O_ASYNC)) {
		__atomic_fetch_or(&i->how, GOXIO_LAZY_LATE_FL, __ATOMIC_RELAXED);
		return 1;
	}
	goxio_late_birth(fd);
	return 0;
}

void goxio_late_plain_all(void) {
	if (__atomic_load_n(&goxio_lazy_fds, __ATOMIC_RELAXED) == 0 || goxio_in_vfork())
		return;
	int high = goxio_fdt_high();
	for (int fd = 0; fd <= high; fd++)
		if (goxio_fd_flags(fd) & GOXIO_FD_LAZY)
			goxio_late_plain(fd);
}

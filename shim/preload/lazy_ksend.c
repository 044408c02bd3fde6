/*
 * lazy_ksend.c: a process without its engine keeps it unloaded for sockets whose destination has
 * no goxio socket: UDP sends stay in C, and connect makes such a socket plain.
 *
 * A process under libgoxio.so loads the engine at its first data call on an inet socket. For a
 * UDP send whose destination no goxio socket is bound to, the engine's answer would be the
 * kernel's sendto, unchanged (ksend.c): loading a Go runtime for it buys nothing and costs the
 * process its start-up, its threads and, on every later system call, the kernel's shared fd
 * table. So a sender that only talks to programs without goxio (a metrics or syslog client, a
 * resolver, sockperf against a plain server) never loads the engine: before it is loaded, a
 * send on a lazy UDP socket asks the discovery directory (dir_map.c, read-only, the way
 * offload/discovery's Receiver asks, but coarser: any entry that is not a listener and has the
 * destination's port counts as a receiver) and sends through the kernel when nobody is there.
 * The answer is kept in ksend.c's cache for the directory's generation, so the next sends to
 * the same destination cost a few loads, and in the fd's notes too (vkey, vgen: again()), which
 * a send checks first (fewer cache lines to miss after each real send). A destination with a
 * possible receiver, a multicast or broadcast one, an address this side cannot read safely, a
 * parameters file or the AF_XDP transport in the environment, VMA's extra API handed out: the
 * engine loads as before.
 *
 * Sending through the kernel is always a correct delivery: a goxio receiver reads its kernel
 * socket too. A receiver that appears later changes the generation: the next send asks again
 * and loads the engine, which adopts the socket (offload/adopt.go) with the sends counted here
 * (goxio_lazy_info.tx) added to its statistics. No directory file yet: nobody receives through
 * rings on this host; the file is looked for again at most every LOOK_AGAIN_NS.
 *
 * A sendto to a destination where a goxio receiver may be bound goes to the kernel too, for the
 * socket's early phase (early.c: goxio_lazy_early_send), until its third data call loads the
 * engine: a process that makes a socket per request to a goxio server loads none.
 *
 * A UDP socket whose sends all went to the kernel this way, without an explicit bind, is in no
 * directory, so nothing can reach it through a ring: its first receive, or a wait on it, makes it
 * plain for good instead of loading the engine (goxio_lazy_recv_plain). A socket per request to
 * a server without goxio (sendto, recv, close) thus never loads one: with it loaded, the Go
 * runtime's threads in the process made the scheduler split client and server across CPUs
 * (4x the kernel's round unpinned, measured), though no call of the socket entered it.
 *
 * connect, the same question at a connect that succeeded or is under way: a TCP socket whose
 * destination no goxio socket listens at, or a UDP socket whose destination no goxio socket is
 * bound to, is made plain for good, as the engine would keep it on the kernel (late.c does the
 * same for sockets made once it is loaded): an HTTP or database client talking to servers without
 * goxio, a resolver with its connected UDP socket, never load the engine. A socket the process
 * shared through a fork stays noted (the engine judges it).
 *
 * Never in a signal handler or a vfork child (the caller then loads the engine, or says why not,
 * as for any data call).
 */
#include "preload.h"
#include "dir_layout.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define LOOK_AGAIN_NS 10000000ull /* 10 ms */

/* env_allows: 1 when the environment leaves the engine nothing to do for such a send (no AF_XDP
 * transport, whose sends to other hosts are the engine's, and no parameters file that could turn
 * it on), 0 otherwise; read once. */
static int env_allows(void) {
	static volatile int v = -1;
	int r = __atomic_load_n(&v, __ATOMIC_RELAXED);
	if (r < 0) {
		const char *xdp = getenv("GOXIO_XDP"), *file = getenv("GOXIO_PARAMS_FILE");
		r = (xdp == NULL || xdp[0] == 0) && (file == NULL || file[0] == 0);
		__atomic_store_n(&v, r, __ATOMIC_RELAXED);
	}
	return r;
}

/* the directory's mapping once found; absent_until: no file was there, look again after it */
static volatile uint64_t *volatile dir_mem;
static volatile uint64_t absent_until;

/* directory returns the mapped directory; NULL with *none set when there is no file (nobody
 * receives through rings), NULL with *none clear when it cannot be read (the engine decides). */
static volatile uint64_t *directory(int *none) {
	*none = 0;
	volatile uint64_t *m = __atomic_load_n(&dir_mem, __ATOMIC_ACQUIRE);
	if (m != NULL)
		return m;
	uint64_t t = goxio_clock_ns(CLOCK_MONOTONIC_COARSE);
	if (t < __atomic_load_n(&absent_until, __ATOMIC_RELAXED)) {
		*none = 1;
		return NULL;
	}
	m = goxio_dir_map(0);
	if (m == NULL) {
		if (errno == ENOENT) {
			__atomic_store_n(&absent_until, t + LOOK_AGAIN_NS, __ATOMIC_RELAXED);
			*none = 1;
		}
		return NULL;
	}
	__atomic_store_n(&dir_mem, m, __ATOMIC_RELEASE);
	return m;
}

/* listener_at reports whether a listener's entry of the directory has port (whatever its
 * address: the engine looks closer); half written entries count. (A datagram's receivers: ksend.c's
 * per-generation port summary, goxio_dir_udp_port_used.) */
static int listener_at(volatile uint64_t *mem, uint16_t port) {
	uint64_t hi = __atomic_load_n(&mem[GOXIO_DIR_H_HIGH], __ATOMIC_ACQUIRE);
	if (hi > GOXIO_DIR_ENTRIES)
		hi = GOXIO_DIR_ENTRIES;
	for (uint64_t i = 0; i < hi; i++) {
		volatile uint64_t *s = mem + GOXIO_DIR_HEADER_WORDS + i * GOXIO_DIR_ENTRY_WORDS;
		uint64_t owner = __atomic_load_n(&s[GOXIO_DIR_E_OWNER], __ATOMIC_ACQUIRE);
		if ((uint32_t)owner == 0 || (owner >> 32 & GOXIO_DIR_F_STREAM) == 0)
			continue;
		if ((uint16_t)(__atomic_load_n(&s[GOXIO_DIR_E_META], __ATOMIC_ACQUIRE) >> 16) == port)
			return 1;
	}
	return 0;
}

int goxio_dest_group(const struct sockaddr *sa) {
	if (sa->sa_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
		return IN_MULTICAST(a) || a == INADDR_BROADCAST;
	}
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (IN6_IS_ADDR_MULTICAST(a6))
		return 1;
	if (!IN6_IS_ADDR_V4MAPPED(a6))
		return 0;
	uint32_t a;
	memcpy(&a, &a6->s6_addr[12], sizeof a);
	a = ntohl(a);
	return IN_MULTICAST(a) || a == INADDR_BROADCAST;
}

/* nobody_at reports whether no goxio socket is bound at dst (a copy, len bytes; stream: no goxio
 * TCP socket listens there); *at (at not NULL) is then the directory generation + 1 the answer
 * holds for (0: none, there is no directory). */
static int nobody_at(const struct sockaddr *dst, socklen_t len, int stream, uint64_t *at) {
	uint64_t unused;
	if (at == NULL)
		at = &unused;
	*at = 0;
	if (!stream && goxio_dest_group(dst))
		return 0;
	int none;
	volatile uint64_t *mem = directory(&none);
	if (mem == NULL)
		return none;
	volatile uint64_t *gen = &mem[GOXIO_DIR_H_GEN];
	/* The generation before the look-up: an entry that appears during it makes the answer
	 * stale at once (the writer bumps it after the entry is complete). */
	uint64_t g = __atomic_load_n(gen, __ATOMIC_ACQUIRE);
	*at = g + 1;
	if (goxio_ksend_known(gen, dst, len, stream))
		return 1;
	uint16_t port = goxio_sa_port(dst);
	if (stream ? listener_at(mem, port) : goxio_dir_udp_port_used(mem, port, NULL))
		return 0;
	if (stream)
		goxio_ksend_put_tcp(dst, len, g, 0);
	else
		goxio_ksend_put(dst, len, g);
	return 1;
}

/* lazy_typed returns fd's notes with its type known (asked of the kernel once), or NULL. */
static struct goxio_lazy_info *lazy_typed(int fd) {
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 1);
	if (i == NULL)
		return NULL;
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	if (!(how & GOXIO_LAZY_TYPED)) {
		int type = 0;
		socklen_t l = sizeof type;
		int saved = errno;
		if (REAL(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0)
			type = 0;
		errno = saved;
		if (type != SOCK_DGRAM && type != SOCK_STREAM)
			return NULL;
		how = __atomic_or_fetch(&i->how, GOXIO_LAZY_TYPED | (type == SOCK_DGRAM ? GOXIO_LAZY_DGRAM : 0),
					__ATOMIC_ACQ_REL);
	}
	return (how & (GOXIO_LAZY_LATE | GOXIO_LAZY_MCAST)) ? NULL : i;
}

/* lazy_udp returns fd's notes when it is a lazy UDP socket. */
static struct goxio_lazy_info *lazy_udp(int fd) {
	struct goxio_lazy_info *i = lazy_typed(fd);
	return i != NULL && (__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & GOXIO_LAZY_DGRAM) ? i : NULL;
}

int goxio_lazy_recv_plain(int fd, int op) {
	if ((op != GOXIO_OP_READ && op != GOXIO_OP_READV && op != GOXIO_OP_RECVFROM && op != GOXIO_OP_RECVMSG &&
	     op != GOXIO_OP_RECVMMSG && op != -1) ||
	    goxio_sig_depth != 0 || goxio_in_vfork() || !goxio_engine_absent() || !env_allows() ||
	    __atomic_load_n(&goxio_vma_api_used, __ATOMIC_RELAXED))
		return 0;
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 0);
	if (i == NULL)
		return 0;
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	if ((how & (GOXIO_LAZY_TYPED | GOXIO_LAZY_DGRAM)) != (GOXIO_LAZY_TYPED | GOXIO_LAZY_DGRAM) ||
	    (how & (GOXIO_LAZY_LATE | GOXIO_LAZY_MCAST | GOXIO_LAZY_BOUND | GOXIO_LAZY_EARLY_UDP)) ||
	    __atomic_load_n(&i->tx[0], __ATOMIC_ACQUIRE) == 0)
		return 0;
	goxio_lazy_plain(fd);
	return 1;
}

/* eligible returns fd's notes when a send with flags on it may stay in C: a lazy UDP socket of a
 * process without its engine, outside a signal handler, in an environment that allows it. */
static struct goxio_lazy_info *eligible(int fd, int flags) {
	if ((flags & ~GOXIO_KSEND_FLAGS) != 0 || goxio_sig_depth != 0 || !goxio_engine_absent() || !env_allows() ||
	    __atomic_load_n(&goxio_vma_api_used, __ATOMIC_RELAXED))
		return NULL;
	return lazy_udp(fd);
}

/* dest_of copies addr (len bytes, readable) into dst when it is a destination the cache keys:
 * IPv4, or IPv6 without a scope or a flow label (the engine answers for those); 0 otherwise. */
static int dest_of(const struct sockaddr *addr, socklen_t len, struct sockaddr_storage *dst) {
	if (len != sizeof(struct sockaddr_in) && len != sizeof(struct sockaddr_in6))
		return 0;
	memcpy(dst, addr, len);
	if (dst->ss_family == AF_INET)
		return len == sizeof(struct sockaddr_in);
	const struct sockaddr_in6 *d6 = (const struct sockaddr_in6 *)dst;
	return dst->ss_family == AF_INET6 && len == sizeof(struct sockaddr_in6) && d6->sin6_scope_id == 0 &&
	       d6->sin6_flowinfo == 0;
}

/* kernel_path returns i's counters when the send to `to` (NULL: the connected peer) goes to the
 * kernel, NULL when the engine must decide. A send to `to` keeps the answer in i's verdict. */
static uint64_t *kernel_path(struct goxio_lazy_info *i, const struct sockaddr *to, socklen_t len) {
	struct sockaddr_storage dst;
	if (to == NULL) {
		/* send, write: the peer connect named */
		if (!(__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & GOXIO_LAZY_CONNECTED))
			return NULL;
		if (i->peer.sin_family == AF_INET) {
			memcpy(&dst, &i->peer, sizeof i->peer);
			len = sizeof i->peer;
		} else if (i->peer6.sin6_family == AF_INET6) {
			memcpy(&dst, &i->peer6, sizeof i->peer6);
			len = sizeof i->peer6;
		} else {
			return NULL;
		}
	} else if (!goxio_ksend_readable(to, len) || !dest_of(to, len, &dst)) {
		return NULL;
	}
	int saved = errno;
	uint64_t at;
	int kernel = nobody_at((const struct sockaddr *)&dst, len, 0, &at);
	errno = saved;
	if (!kernel && to != NULL && at != 0)
		/* A goxio receiver may be there: the socket's early phase sends through the kernel
		 * too, which that receiver reads (early.c). */
		return goxio_lazy_early_send(i, (const struct sockaddr *)&dst, len) ? i->tx : NULL;
	if (kernel && at != 0 && to != NULL) {
		/* The writer clears vgen, stores vkey, then vgen (again() reads vgen around vkey). */
		__atomic_store_n(&i->vgen, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&i->vkey, goxio_ksend_key((const struct sockaddr *)&dst, len), __ATOMIC_RELEASE);
		__atomic_store_n(&i->vgen, at, __ATOMIC_RELEASE);
	}
	return kernel ? i->tx : NULL;
}

/* again returns fd's counters when its verdict holds for a send with flags to `to`: the same
 * destination as the last one found without a goxio receiver, and the directory unchanged since.
 * It reads the notes, the generation word and the address alone (the checks eligible() made for
 * the verdict cannot have changed but a vfork and VMA's extra API), so that a sender's steady
 * state misses few cache lines after each real send; NULL: ask again. */
static uint64_t *again(int fd, const struct sockaddr *to, socklen_t len, int flags) {
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 0);
	volatile uint64_t *mem = __atomic_load_n(&dir_mem, __ATOMIC_ACQUIRE);
	if (i == NULL || mem == NULL || to == NULL || (flags & ~GOXIO_KSEND_FLAGS) != 0 || goxio_in_vfork() ||
	    __atomic_load_n(&goxio_vma_api_used, __ATOMIC_RELAXED))
		return NULL;
	uint64_t g = __atomic_load_n(&i->vgen, __ATOMIC_ACQUIRE);
	uint64_t key = __atomic_load_n(&i->vkey, __ATOMIC_ACQUIRE);
	if (g == 0 || __atomic_load_n(&mem[GOXIO_DIR_H_GEN], __ATOMIC_ACQUIRE) + 1 != g ||
	    !goxio_ksend_readable(to, len) || goxio_ksend_key(to, len) != key ||
	    __atomic_load_n(&i->vgen, __ATOMIC_ACQUIRE) != g)
		return NULL;
	return i->tx;
}

uint64_t *goxio_lazy_ksend(int fd, const struct sockaddr *to, socklen_t len, int flags) {
	uint64_t *ctr = again(fd, to, len, flags);
	if (ctr != NULL)
		return ctr;
	struct goxio_lazy_info *i = eligible(fd, flags);
	return i != NULL ? kernel_path(i, to, len) : NULL;
}

uint64_t *goxio_lazy_ksendmsg(int fd, const struct msghdr *msg, int flags) {
	struct goxio_lazy_info *i = eligible(fd, flags);
	if (i == NULL || !goxio_ksend_readable(msg, sizeof *msg))
		return NULL;
	return kernel_path(i, msg->msg_name, msg->msg_name != NULL ? msg->msg_namelen : 0);
}

int goxio_lazy_connect_plain(int fd, const struct sockaddr *addr, socklen_t len) {
	struct sockaddr_storage dst;
	/* addr: the kernel read it (connect succeeded or is under way) */
	if (goxio_sig_depth != 0 || !goxio_engine_absent() || !env_allows() || __atomic_load_n(&goxio_vma_api_used, __ATOMIC_RELAXED) ||
	    addr == NULL || !dest_of(addr, len, &dst))
		return 0;
	struct goxio_lazy_info *i = lazy_typed(fd);
	if (i == NULL || (__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & GOXIO_LAZY_FORKED))
		return 0;
	int stream = !(__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & GOXIO_LAZY_DGRAM);
	if (!nobody_at((const struct sockaddr *)&dst, len, stream, NULL))
		return 0;
	goxio_lazy_plain(fd);
	return 1;
}

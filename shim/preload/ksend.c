/*
 * ksend.c: sends to destinations that have no goxio receiver, decided in C.
 *
 * An unconnected UDP sender on the shared-memory transport asks, at every sendto, whether its
 * destination is a goxio socket (a ring) or not (the kernel). For a destination that is not, the
 * engine's answer is the kernel's sendto, unchanged: a trip into Go (about 75 ns plus the
 * engine's bookkeeping) that buys nothing. This file keeps the engine's negative answers:
 *
 *   - a cache of destinations (IPv4 or IPv6 address and port) that no goxio socket is bound to, valid for
 *     one generation of the discovery directory (the engine's shared memory, which it maps and
 *     whose generation word it hands over once: goxio_ksend_setup). Every change of the directory
 *     (a goxio socket bound, connected, closed, anywhere in the namespace) bumps the generation,
 *     which empties the cache at once for every reader;
 *   - per fd, whether the engine allows the shortcut for that socket (goxio_ksend_fd: a socket
 *     of the shared-memory UDP transport with its port, which has sent through the kernel), and
 *     where its statistics count the sends (its slot's kernel tx counters, or a scratch pair);
 *   - per fd of a connected socket, its peer (goxio_ksend_peer), the destination of its sends
 *     that name none (send, write, sendto without an address).
 *
 * Readers (the sendto and sendmsg trampolines) take no lock and write nothing but the counters;
 * writers (the engine, on its slow path) serialize on a mutex. The cache is direct-mapped and
 * bounded (KS_SLOTS entries): a collision only costs a trip into the engine.
 */
#include "preload.h"
#include "dir_layout.h"

#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define KS_SLOTS 256u

/* ks_key: 0 empty, else a destination's key (ks_key_of): for IPv4, and IPv4-mapped IPv6,
 * KS_VALID | address << 16 | port (both in network order as stored); for IPv6 a 63-bit hash of
 * address and port with KS_V6 set (never an IPv4 key). Two IPv6 destinations with one hash are
 * one entry: a send to the one with a goxio receiver may then go through the kernel, whose
 * socket that receiver reads too, so the datagram still arrives. */
#define KS_VALID (1ull << 48)
#define KS_V6 (1ull << 63)
/* KS_TCP marks the key of a destination that no goxio TCP socket listens at (late.c): the two
 * kinds of negative answer share the cache. */
#define KS_TCP (1ull << 49)
/* KS_TCP_GOXIO marks the key of a destination where a goxio TCP socket listens (early.c): a
 * connect there starts its connection's early phase in C. */
#define KS_TCP_GOXIO (1ull << 50)
static volatile uint64_t ks_key[KS_SLOTS];
/* ks_gen: the directory generation + 1 that every key belongs to; 0 while being reset. */
static volatile uint64_t ks_gen;
/* ks_dir_gen: the discovery directory's generation word (read-only here); NULL until set up. */
static const volatile uint64_t *ks_dir_gen;
static pthread_mutex_t ks_mu = PTHREAD_MUTEX_INITIALIZER;

/* ks_page: the page of the last destination address a send of this thread read successfully
 * (through the engine, which reads program memory with fault protection, or here). The shortcut
 * reads only an address on that page: an unmapped or bad one still reaches the engine, which
 * answers EFAULT as the kernel does, where reading it here would crash the program. */
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t ks_page;

/* ks_fd[fd]: the fd's statistics counters (tx packets, tx bytes, tx EAGAIN, tx errors, in the
 * order the engine gave them) while the shortcut is allowed on it; NULL otherwise. */
GOXIO_COLD static uint64_t *volatile ks_fd[GOXIO_FDT_SIZE];
/* ks_peer[fd]: the key of the connected peer (ks_make), 0 for none. */
GOXIO_COLD static volatile uint64_t ks_peer[GOXIO_FDT_SIZE];
/* ks_scratch: the counters of sockets without a statistics slot. */
static uint64_t ks_scratch[GOXIO_KSEND_COUNTERS];
/* ks_fds: how many fds allow the shortcut; the trampolines skip everything while it is 0. */
volatile int goxio_ksend_fds;

/* ks_capture: the statistics segment's capture word; not 0 while a capture may be attached, which
 * records the kernel path's datagrams too (the engine's taps): the engine then sends. */
static const volatile uint64_t *ks_capture;
static const uint64_t ks_no_capture;

/* ks_handoff: two words the engine's spins take (offload/internal/wait handoff.go, crowd.go).
 *
 * handoff: set by every send of the shortcut (goxio_ksend_count); the engine's next spin takes
 * it and yields once at its first poll, as after a kernel send of its own (wait.Handoff): a
 * datagram to a local receiver asleep in the kernel is a synchronous wake-up, which queues the
 * receiver on this CPU, where a spinning receive of this process would keep it waiting. A goxio
 * server answering a UDP socket per request through the shortcut spun ~55 us (sysc.YieldAfter,
 * then its first yield) before the client it had woken on its CPU ran (sched_switch traces).
 *
 * rang: set by every doorbell a ring send of the trampoline rang (rsend.c, goxio_ksend_rang);
 * the engine's next spin looks at the crowd at its first poll and yields when the woken thread
 * waits for a CPU, as after a doorbell of its own (wait.Woke). A doorbell is a synchronous
 * wake-up too; without the look, a sockperf under-load server answering through the trampoline
 * kept the client's receiving thread, queued on its CPU, waiting ~200 us in 1.2-1.4% of the
 * replies (sched_switch traces: the wake-up did not preempt the spinning server, which never
 * yielded until it slept); with it, 0.01-0.04%, p99 105 -> 25-40 us. */
static struct {
	uint32_t handoff;
	uint32_t rang;
	char pad[56]; /* a line of its own: the sends write it, every send reads ks_capture */
} ks_handoff __attribute__((aligned(64)));

uint32_t *goxio_ksend_setup(const uint64_t *gen, const uint64_t *capture, uint64_t *plain) {
	goxio_late_counter(plain);
	/* Keys stored before the engine (lazy_ksend.c) belong to the preload library's own mapping
	 * of the directory, which may not be the engine's: they go. */
	pthread_mutex_lock(&ks_mu);
	__atomic_store_n(&ks_gen, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ks_mu);
	__atomic_store_n(&ks_capture, capture != NULL ? capture : &ks_no_capture, __ATOMIC_RELEASE);
	__atomic_store_n(&ks_dir_gen, gen, __ATOMIC_RELEASE);
	return &ks_handoff.handoff;
}

static inline uint32_t ks_hash(uint64_t key) { return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 56) % KS_SLOTS; }

/* ks_key_of is the key of the destination sa (len bytes, readable): 0 when it is none the cache
 * takes (another family or length, an IPv6 scope id or flow label: the engine answers). */
static uint64_t ks_key_of(const struct sockaddr *sa, socklen_t len) {
	if (len == (socklen_t)sizeof(struct sockaddr_in) && sa->sa_family == AF_INET) {
		struct sockaddr_in sin;
		memcpy(&sin, sa, sizeof sin);
		return KS_VALID | (uint64_t)sin.sin_addr.s_addr << 16 | sin.sin_port;
	}
	if (len != (socklen_t)sizeof(struct sockaddr_in6) || sa->sa_family != AF_INET6)
		return 0;
	struct sockaddr_in6 s6;
	memcpy(&s6, sa, sizeof s6);
	if (s6.sin6_scope_id != 0 || s6.sin6_flowinfo != 0)
		return 0;
	if (IN6_IS_ADDR_V4MAPPED(&s6.sin6_addr)) {
		uint32_t a;
		memcpy(&a, &s6.sin6_addr.s6_addr[12], sizeof a);
		return KS_VALID | (uint64_t)a << 16 | s6.sin6_port;
	}
	uint64_t w[2], h = s6.sin6_port;
	memcpy(w, &s6.sin6_addr, sizeof w);
	for (int i = 0; i < 2; i++) {
		h ^= w[i];
		h *= 0x9E3779B97F4A7C15ull;
		h ^= h >> 29;
	}
	return KS_V6 | (h >> 1) | 1;
}

/* ks_put stores key for generation gen. */
static void ks_put(uint64_t key, uint64_t gen) {
	if (key == 0)
		return;
	pthread_mutex_lock(&ks_mu);
	uint64_t cur = __atomic_load_n(&ks_gen, __ATOMIC_RELAXED);
	if (gen + 1 > cur) {
		/* A newer directory: every key goes. Readers that see the new generation see no
		 * key of the old one (the stores below come after the reset is visible). */
		__atomic_store_n(&ks_gen, 0, __ATOMIC_RELEASE);
		for (unsigned i = 0; i < KS_SLOTS; i++)
			__atomic_store_n(&ks_key[i], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&ks_gen, gen + 1, __ATOMIC_RELEASE);
		cur = gen + 1;
	}
	if (gen + 1 == cur)
		__atomic_store_n(&ks_key[ks_hash(key)], key, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ks_mu);
}

void goxio_ksend_put(const struct sockaddr *dst, socklen_t len, uint64_t gen) {
	ks_put(dst != NULL ? ks_key_of(dst, len) : 0, gen);
}

void goxio_ksend_put_tcp(const struct sockaddr *dst, socklen_t len, uint64_t gen, int goxio) {
	uint64_t key = dst != NULL ? ks_key_of(dst, len) : 0;
	ks_put(key != 0 ? key ^ (goxio ? KS_TCP_GOXIO : KS_TCP) : 0, gen);
}

int goxio_ksend_ready(void) { return __atomic_load_n(&ks_dir_gen, __ATOMIC_ACQUIRE) != NULL; }

/* ks_cached_at reports whether key is in the cache for the current generation of the directory
 * whose generation word is dg. */
static int ks_cached_at(uint64_t key, const volatile uint64_t *dg) {
	if (dg == NULL)
		return 0;
	uint64_t g = __atomic_load_n(dg, __ATOMIC_ACQUIRE) + 1;
	if (__atomic_load_n(&ks_gen, __ATOMIC_ACQUIRE) != g)
		return 0;
	if (__atomic_load_n(&ks_key[ks_hash(key)], __ATOMIC_ACQUIRE) != key)
		return 0;
	/* The key was stored for generation g - 1 unless a reset ran meanwhile, which changed
	 * ks_gen for good (generations only grow). */
	return __atomic_load_n(&ks_gen, __ATOMIC_ACQUIRE) == g;
}

/* ks_cached reports whether key is in the cache for the engine's directory's current generation. */
static int ks_cached(uint64_t key) { return ks_cached_at(key, __atomic_load_n(&ks_dir_gen, __ATOMIC_ACQUIRE)); }

uint64_t goxio_ksend_key(const struct sockaddr *dst, socklen_t len) { return ks_key_of(dst, len); }

int goxio_ksend_known(const volatile uint64_t *gen, const struct sockaddr *dst, socklen_t len, int tcp) {
	uint64_t key = ks_key_of(dst, len);
	return key != 0 && ks_cached_at(tcp ? key ^ KS_TCP : key, gen);
}

int goxio_ksend_readable(const void *p, socklen_t len) {
	uintptr_t a = (uintptr_t)p;
	if (p == NULL || len == 0 || a >> 12 != (a + len - 1) >> 12)
		return 0;
	if (a >> 12 == ks_page)
		return 1;
	/* Read through the kernel, which answers EFAULT where a load would fault. */
	char buf[sizeof(struct sockaddr_in6) > sizeof(struct msghdr) ? sizeof(struct sockaddr_in6) : sizeof(struct msghdr)];
	if (len > sizeof buf)
		return 0;
	struct iovec local = {buf, len}, remote = {(void *)p, len};
	int saved = errno;
	ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	errno = saved;
	if (r != (ssize_t)len)
		return 0;
	ks_page = a >> 12;
	return 1;
}

/* A miss of the cache (a destination not sent to since the directory last changed) is answered
 * here too when no UDP entry of the directory has the destination's port: a server that answers
 * each request's new socket (a new port per request) would otherwise take a trip into the engine
 * at every answer, which the engine answers with the same kernel send after a look at its
 * directory (measured on the 2-CPU test machine, a UDP socket per request to a goxio server, both
 * on one CPU: the trip and its cold Go path were a third of the server's added cost). The
 * engine's directory is the mapping ks_dir_gen lies in (discovery.Dir.GenWord: the generation's
 * word of the segment's header). */
#define KS_PORT_WORDS (65536u / 64u)
/* ks_ports summarizes the ports of the UDP entries (listeners excluded) of the directory mapped at
 * ks_ports_mem for one generation (ks_ports_gen: it + 1, 0 for none), as
 * discovery.Dir.UDPPortFree does; rebuilt under ks_mu when the mapping or the generation moved.
 * An entry being written while the summary is built changes the generation after it is complete:
 * the next look builds again; a torn read only adds a port. The summary is coarser than the
 * engine's look (any address with the port counts), never wrong in the other direction. */
static uint64_t ks_ports[KS_PORT_WORDS];
static const volatile uint64_t *ks_ports_mem;
static uint64_t ks_ports_gen;

int goxio_dir_udp_port_used(const volatile uint64_t *mem, uint16_t port, uint64_t *gen) {
	pthread_mutex_lock(&ks_mu);
	uint64_t g = __atomic_load_n(&mem[GOXIO_DIR_H_GEN], __ATOMIC_ACQUIRE);
	if (ks_ports_mem != mem || ks_ports_gen != g + 1) {
		memset(ks_ports, 0, sizeof ks_ports);
		uint64_t hi = __atomic_load_n(&mem[GOXIO_DIR_H_HIGH], __ATOMIC_ACQUIRE);
		if (hi > GOXIO_DIR_ENTRIES)
			hi = GOXIO_DIR_ENTRIES;
		for (uint64_t i = 0; i < hi; i++) {
			const volatile uint64_t *e = mem + GOXIO_DIR_HEADER_WORDS + i * GOXIO_DIR_ENTRY_WORDS;
			uint64_t owner = __atomic_load_n(&e[GOXIO_DIR_E_OWNER], __ATOMIC_ACQUIRE);
			if ((uint32_t)owner == 0 || (owner >> 32 & GOXIO_DIR_F_STREAM) != 0)
				continue;
			uint16_t p = (uint16_t)(__atomic_load_n(&e[GOXIO_DIR_E_META], __ATOMIC_ACQUIRE) >> 16);
			ks_ports[p / 64] |= 1ull << (p % 64);
		}
		ks_ports_mem = mem;
		ks_ports_gen = g + 1;
	}
	int used = (ks_ports[port / 64] & 1ull << (port % 64)) != 0;
	pthread_mutex_unlock(&ks_mu);
	if (gen != NULL)
		*gen = g;
	return used;
}

/* ks_port_free reports whether no goxio UDP socket of the engine's directory is bound at the
 * port of `to` (read safely before, key its key), and then caches the answer as the engine would. */
static int ks_port_free(const struct sockaddr *to, uint64_t key) {
	if (goxio_dest_group(to))
		return 0;
	const volatile uint64_t *genw = __atomic_load_n(&ks_dir_gen, __ATOMIC_ACQUIRE);
	uint64_t g;
	if (goxio_dir_udp_port_used(genw - GOXIO_DIR_H_GEN, goxio_sa_port(to), &g))
		return 0;
	ks_put(key, g);
	return 1;
}

void goxio_ksend_learn(const struct sockaddr *dst, socklen_t len) {
	uint64_t key = ks_key_of(dst, len);
	if (key != 0 && __atomic_load_n(&ks_dir_gen, __ATOMIC_ACQUIRE) != NULL && !ks_cached(key))
		ks_port_free(dst, key);
}

uint64_t goxio_ksend_page_key(const struct sockaddr *dst, socklen_t len) {
	uintptr_t a = (uintptr_t)dst;
	if (dst == NULL || len < (socklen_t)sizeof(struct sockaddr_in) || len > (socklen_t)sizeof(struct sockaddr_in6) ||
	    a >> 12 != ks_page || (a + len - 1) >> 12 != ks_page)
		return 0;
	return ks_key_of(dst, len);
}

int goxio_ksend_no_receiver(const struct sockaddr *dst, socklen_t len, int flags) {
	uint64_t key = (flags & ~GOXIO_KSEND_FLAGS) == 0 ? goxio_ksend_page_key(dst, len) : 0;
	return key != 0 && __atomic_load_n(ks_capture, __ATOMIC_RELAXED) == 0 && ks_cached(key);
}

int goxio_ksend_no_receiver_at(const struct sockaddr *dst, socklen_t len) {
	uint64_t key = ks_key_of(dst, len);
	return key != 0 && ks_cached(key);
}

int goxio_ksend_no_listener(const struct sockaddr *dst, socklen_t len) {
	uint64_t key = ks_key_of(dst, len);
	return key != 0 && ks_cached(key ^ KS_TCP);
}

int goxio_ksend_goxio_listener(const struct sockaddr *dst, socklen_t len) {
	uint64_t key = ks_key_of(dst, len);
	return key != 0 && ks_cached(key ^ KS_TCP_GOXIO);
}

int goxio_ksend_capturing(void) {
	const volatile uint64_t *c = __atomic_load_n(&ks_capture, __ATOMIC_ACQUIRE);
	return c == NULL || __atomic_load_n(c, __ATOMIC_RELAXED) != 0;
}

void goxio_ksend_fd(int fd, uint64_t *counters) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE)
		return;
	uint64_t *want = counters != NULL ? counters : ks_scratch;
	pthread_mutex_lock(&ks_mu);
	uint64_t *old = __atomic_exchange_n(&ks_fd[fd], want, __ATOMIC_ACQ_REL);
	if (old == NULL)
		__atomic_add_fetch(&goxio_ksend_fds, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ks_mu);
}

void goxio_ksend_peer(int fd, const struct sockaddr *peer, socklen_t len) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE)
		return;
	__atomic_store_n(&ks_peer[fd], peer != NULL ? ks_key_of(peer, len) : 0, __ATOMIC_RELEASE);
}

void goxio_ksend_drop(int fd) {
	if ((unsigned)fd < GOXIO_FDT_SIZE)
		__atomic_store_n(&ks_peer[fd], 0, __ATOMIC_RELEASE);
	if ((unsigned)fd >= GOXIO_FDT_SIZE || __atomic_load_n(&ks_fd[fd], __ATOMIC_RELAXED) == NULL)
		return;
	pthread_mutex_lock(&ks_mu);
	if (__atomic_exchange_n(&ks_fd[fd], NULL, __ATOMIC_ACQ_REL) != NULL)
		__atomic_sub_fetch(&goxio_ksend_fds, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ks_mu);
}


void goxio_ksend_seen(const struct sockaddr *to, socklen_t len) {
	uintptr_t a = (uintptr_t)to;
	if (to != NULL && len >= (socklen_t)sizeof(struct sockaddr_in) && len <= (socklen_t)sizeof(struct sockaddr_in6) &&
	    a >> 12 == (a + len - 1) >> 12)
		ks_page = a >> 12;
}

uint64_t *goxio_ksend_counters(int fd, const struct sockaddr *to, socklen_t len, int flags) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE)
		return NULL;
	uint64_t *ctr = __atomic_load_n(&ks_fd[fd], __ATOMIC_ACQUIRE);
	if (ctr == NULL || (flags & ~GOXIO_KSEND_FLAGS) != 0)
		return NULL;
	uint64_t key;
	if (to == NULL) {
		/* A send naming no destination: the connected peer's (none: the engine answers). */
		if ((key = __atomic_load_n(&ks_peer[fd], __ATOMIC_ACQUIRE)) == 0)
			return NULL;
	} else if ((key = goxio_ksend_page_key(to, len)) == 0) {
		return NULL;
	}
	if (__atomic_load_n(&ks_dir_gen, __ATOMIC_ACQUIRE) == NULL || __atomic_load_n(ks_capture, __ATOMIC_RELAXED) != 0)
		return NULL;
	if (!ks_cached(key) && (to == NULL || !ks_port_free(to, key)))
		return NULL;
	return ctr;
}

void goxio_ksend_count(uint64_t *ctr, long r) {
	/* errno is read only for a failed send: its address is a call into libc, ~1% of a 64-byte send
	 * to a loopback receiver, which every caller paid when it passed errno in. */
	if (r >= 0) {
		__atomic_add_fetch(&ctr[0], 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&ctr[1], (uint64_t)r, __ATOMIC_RELAXED);
		if (!__atomic_load_n(&ks_handoff.handoff, __ATOMIC_RELAXED)) /* the line is the spins' too */
			__atomic_store_n(&ks_handoff.handoff, 1, __ATOMIC_RELAXED);
	} else if (errno == EAGAIN) {
		__atomic_add_fetch(&ctr[2], 1, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&ctr[3], 1, __ATOMIC_RELAXED);
	}
}

void goxio_ksend_rang(void) {
	if (!__atomic_load_n(&ks_handoff.rang, __ATOMIC_RELAXED)) /* the line is the spins' too */
		__atomic_store_n(&ks_handoff.rang, 1, __ATOMIC_RELAXED);
}

int goxio_ksend_gen_is(uint64_t gen) {
	const volatile uint64_t *dg = __atomic_load_n(&ks_dir_gen, __ATOMIC_ACQUIRE);
	return dg != NULL && __atomic_load_n(dg, __ATOMIC_ACQUIRE) == gen;
}

/*
 * early.c: a TCP connection between goxio processes, served in C until it may pair.
 *
 * Two goxio processes' connection moves to shared-memory rings late (offload/transport/shmtcp
 * late.go): the connecting end registers it in the pairing table at connect, makes the
 * connection's segment at its GOXIO_SHM_TCP_PAIR_AFTER-th data call, and the accepting end
 * attaches when the table says so. Until then every call is the kernel's, counted. A connection
 * per request (connect, a request, its answer, close) never gets that far, yet it paid a trip
 * into Go at each call of both ends: 15 us a connection at each end on this machine against the
 * kernel's 70 us round (a cold Go path each time: the engine's socket, its statistics slot, its
 * transport, then the calls).
 *
 * So the early phase runs here, with the engine loaded, on the connection's late socket (late.c):
 *   - accept on a listener the engine published (it marks it: goxio_early_listener) is the
 *     kernel's; the new fd is late, noted accepted (EARLY_ACC) with the time;
 *   - connect of a late socket to a destination the engine found a goxio listener at (the
 *     positive TCP key of ksend.c's cache, for the directory's generation) is the kernel's; then
 *     the connection is registered in the pairing table from C (pairs.c, the Go writer's
 *     protocol) before connect returns, so before the program can send a byte (EARLY_CON);
 *   - data calls (read, write, recv, send and their vector and message forms) go to the kernel
 *     and count the bytes they moved; the accepting end first looks its connection up in the
 *     table (memory reads): ready -> the connection goes to the engine, which attaches; no entry
 *     after a byte from the peer or after the attach grace -> the peer is no goxio process: a
 *     plain fd for good; the connecting end counts its data calls and goes to the engine at the
 *     PAIR_AFTER-th, which makes the segment;
 *   - getsockname, getpeername, getsockopt, shutdown (noted), the options late.c lets through,
 *     select and poll are the kernel's (the kernel is the connection's truth until it pairs: the peer writes to the
 *     kernel until this end attached, and the accepting end's wake-ups arrive as kernel bytes);
 *     every other call (epoll_ctl, dup, ioctl, sendfile, ...) gives it to the engine
 *     first, as late.c does;
 *   - close drops the registration.
 * The engine takes the connection over with what happened (goxio_engine.early): its role from
 * the kernel and the listener, the data calls and the kernel bytes (its K), the time since
 * accept. A data call still in the kernel on another thread makes a hand-over wait for a later
 * call (its bytes are not counted yet), as the engine's own establishment does (estab.go);
 * one that cannot wait (a control call) hands it over never to pair.
 */
#include "preload.h"
#include "trampoline.h"

#include <netinet/in.h>
#include <sched.h>
#include <string.h>

__thread __attribute__((tls_model("initial-exec"))) int goxio_early_handing_fd = -1;

static volatile uint64_t *early_pairs;
static uint64_t early_start;
/* early_pid: this process's pid when the engine set the early phase up (a registration's owner;
 * getpid is a system call per connection), for as long as no fork made a child of it */
static uint32_t early_pid;
static int early_after = 4;
static uint64_t early_grace;

/* early_lst[fd]: the domain of fd, a listener the engine published (0: none; GOXIO_LISTENER_PLAIN:
 * one whose connections are the kernel's for good). Cleared when the fd's engine flag goes
 * (fdtable.c), so a reused number starts unmarked. */
GOXIO_COLD static volatile uint8_t early_lst[GOXIO_FDT_SIZE];

/* early_closed_word: the statistics' counter of connections closed in their early phase. */
static uint64_t early_closed_own;
static uint64_t *volatile early_closed_word = &early_closed_own;

void goxio_early_setup(uint64_t *pairs, uint64_t start, int pair_after, uint64_t grace_ns, uint64_t *closed) {
	early_closed_word = closed != NULL ? closed : &early_closed_own;
	early_start = start;
	early_pid = (uint32_t)getpid();
	early_after = pair_after > 0 ? pair_after : 1;
	early_grace = grace_ns;
	__atomic_store_n(&early_pairs, pairs, __ATOMIC_RELEASE);
}

void goxio_early_listener(int fd, int domain) {
	if ((unsigned)fd < GOXIO_FDT_SIZE)
		__atomic_store_n(&early_lst[fd], (uint8_t)domain, __ATOMIC_RELEASE);
}

static void early_forget_listener(int fd);

void goxio_early_unlisten(int fd) {
	if ((unsigned)fd < GOXIO_FDT_SIZE && __atomic_load_n(&early_lst[fd], __ATOMIC_RELAXED) != 0) {
		__atomic_store_n(&early_lst[fd], 0, __ATOMIC_RELEASE);
		early_forget_listener(fd);
	}
}

/* early_gates: nothing of the calling thread or the process wants the engine to see a call in C
 * (a signal handler, a vfork child, a capture, VMA's extra API handed out); the early phases and
 * the plain accept (plain_accept) look at it. */
static int early_gates(void) {
	return goxio_sig_depth == 0 && !goxio_in_vfork() && !goxio_ksend_capturing() &&
	       !__atomic_load_n(&goxio_vma_api_used, __ATOMIC_RELAXED);
}

/* early_ok: nothing keeps a connection from its early phase in C now. The engine sets the
 * pairing table up only after ksend.c's cache (shim/early_unsafe.go), so early_pairs implies
 * goxio_ksend_ready. */
static int early_ok(void) {
	return __atomic_load_n(&early_pairs, __ATOMIC_ACQUIRE) != NULL && early_gates();
}

/* early_udp_ok: nothing keeps a UDP socket from its early phase in C now (ksend.c's cache is set
 * up: the shared-memory UDP transport is on and the AF_XDP one off). */
static int early_udp_ok(void) {
	return goxio_ksend_ready() && early_gates();
}

/*
 * An accepted connection's key without system calls of its own: the peer's address from accept
 * itself, the local address from the listener's. accept writes the peer into the library's buffer
 * when the program passes none, or when the program's buffers lie on the pages an accept of this
 * thread handed the kernel before (then copied out as the kernel would: at most the program's
 * length, the full length back), so that a bad pointer still meets the kernel first (EFAULT) and
 * never a load or store here. A listener bound to one address gives its local address to every
 * connection (a 16-entry cache, looked up once per listener, seqlocked); one bound to the
 * wildcard address leaves it to getsockname at the first data call.
 */
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t early_acc_addr_page, early_acc_len_page;

#define EARLY_LADDRS 16u
static struct early_laddr {
	volatile uint32_t seq; /* odd while written */
	volatile int fd;
	volatile uint32_t len; /* 0: a wildcard listener */
	struct sockaddr_in6 a; /* a sockaddr_in or sockaddr_in6 */
} early_laddrs[EARLY_LADDRS];

/* early_listener_addr copies listener fd's local address into a (0: none known here). */
static socklen_t early_listener_addr(int fd, struct sockaddr_in6 *a) {
	struct early_laddr *e = &early_laddrs[(unsigned)fd % EARLY_LADDRS];
	for (int tries = 0; tries < 2; tries++) {
		uint32_t s1 = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		if (!(s1 & 1) && e->fd == fd) {
			uint32_t len = e->len;
			memcpy(a, (const void *)&e->a, sizeof *a);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) == s1)
				return len;
			continue;
		}
		/* Not cached: ask the kernel once and keep the answer (a wildcard listener's too). */
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		int saved = errno;
		int ok = REAL(getsockname)(fd, (struct sockaddr *)&ss, &sl) == 0;
		errno = saved;
		if (!ok)
			return 0;
		uint32_t len = 0;
		if (ss.ss_family == AF_INET && sl == sizeof(struct sockaddr_in)) {
			if (((struct sockaddr_in *)&ss)->sin_addr.s_addr != htonl(INADDR_ANY))
				len = sl;
		} else if (ss.ss_family == AF_INET6 && sl == sizeof(struct sockaddr_in6)) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			if (!IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr) && !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) &&
			    s6->sin6_scope_id == 0)
				len = sl;
		}
		if (!(s1 & 1) && __atomic_compare_exchange_n(&e->seq, &s1, s1 + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			e->fd = fd;
			e->len = len;
			memcpy((void *)&e->a, &ss, sizeof e->a);
			__atomic_store_n(&e->seq, s1 + 2, __ATOMIC_RELEASE);
		}
		memcpy(a, &ss, sizeof *a);
		return len;
	}
	return 0;
}

/* early_forget_listener drops fd's cached local address. */
static void early_forget_listener(int fd) {
	struct early_laddr *e = &early_laddrs[(unsigned)fd % EARLY_LADDRS];
	uint32_t s = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
	if (!(s & 1) && e->fd == fd && __atomic_compare_exchange_n(&e->seq, &s, s + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		e->fd = -1;
		__atomic_store_n(&e->seq, s + 2, __ATOMIC_RELEASE);
	}
}

/* early_set_key stores the accepting end's key (readers load keyed first). */
static void early_set_key(struct goxio_lazy_info *i, const struct goxio_pair_key *k) {
	memcpy((void *)i->early.key, k->w, sizeof k->w);
	__atomic_store_n(&i->early.keyed, 1, __ATOMIC_RELEASE);
}

/* plain_accept is accept on a listener whose connections are the kernel's for good
 * (GOXIO_LISTENER_PLAIN): a plain fd, counted as one made plain, without the engine, which would
 * only give it a statistics slot and pass its calls through (offload's accepted). -2 when the
 * engine is to see it (a signal handler, a vfork child, a capture, VMA's extra API). */
static int plain_accept(int fd, struct sockaddr *addr, socklen_t *len, int flags, int four) {
	if (!early_gates() || !goxio_active())
		return -2;
	int nfd = four ? REAL(accept4)(fd, addr, len, flags) : REAL(accept)(fd, addr, len);
	if (nfd >= 0) {
		int saved = errno;
		goxio_fd_fresh(nfd);
		goxio_late_count_plain();
		errno = saved;
	}
	return nfd;
}

int goxio_early_accept(int fd, struct sockaddr *addr, socklen_t *len, int flags, int four) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE)
		return -2;
	int domain = __atomic_load_n(&early_lst[fd], __ATOMIC_ACQUIRE);
	if (domain == GOXIO_LISTENER_PLAIN)
		return plain_accept(fd, addr, len, flags, four);
	if (domain == 0 || !early_ok() || !goxio_active())
		return -2;
	struct sockaddr_storage peer;
	socklen_t plen = sizeof peer, cap = 0;
	uintptr_t a = (uintptr_t)addr, l = (uintptr_t)len;
	/* own: the kernel writes the peer into our buffer (and we copy it out) */
	int own = addr == NULL;
	if (!own && len != NULL && l >> 12 == early_acc_len_page && (l + sizeof *len - 1) >> 12 == early_acc_len_page &&
	    a >> 12 == early_acc_addr_page) {
		cap = *len;
		own = (int)cap >= 0 && (a + (cap < sizeof(struct sockaddr_in6) ? cap : sizeof(struct sockaddr_in6)) - 1) >> 12 ==
						 early_acc_addr_page;
	}
	int nfd;
	if (own)
		nfd = four ? REAL(accept4)(fd, (struct sockaddr *)&peer, &plen, flags) : REAL(accept)(fd, (struct sockaddr *)&peer, &plen);
	else
		nfd = four ? REAL(accept4)(fd, addr, len, flags) : REAL(accept)(fd, addr, len);
	if (nfd < 0)
		return nfd;
	int saved = errno;
	if (own && addr != NULL) {
		/* An inet peer's address is at most a sockaddr_in6: within the bytes checked above. */
		size_t n = cap < plen ? cap : plen;
		memcpy(addr, &peer, n < sizeof(struct sockaddr_in6) ? n : sizeof(struct sockaddr_in6));
		*len = plen;
	} else if (!own && addr != NULL && len != NULL) {
		/* The kernel wrote both: the pages are good for this thread's next accepts. */
		early_acc_addr_page = a >> 12;
		early_acc_len_page = l >> 12;
	}
	goxio_fd_fresh(nfd);
	/* Not noted (no memory for the notes): a plain kernel connection, never offloaded. */
	if (goxio_late_mark_early(nfd, domain, SOCK_STREAM | (four ? (flags & SOCK_NONBLOCK) : 0), 0, GOXIO_LAZY_EARLY_ACC, fd,
				  goxio_clock_ns(CLOCK_MONOTONIC)) &&
	    own) {
		struct sockaddr_in6 local;
		socklen_t llen = early_listener_addr(fd, &local);
		struct goxio_pair_key k;
		struct goxio_lazy_info *i = goxio_lazy_info_of(nfd, 0);
		if (llen != 0 && i != NULL &&
		    goxio_pair_key_of(&k, (const struct sockaddr *)&peer, plen, (const struct sockaddr *)&local, llen))
			early_set_key(i, &k);
	}
	errno = saved;
	return nfd;
}

int goxio_early_wants(const struct sockaddr *addr, socklen_t len) {
	return early_ok() && goxio_ksend_goxio_listener(addr, len);
}

void goxio_early_connected(int fd, const struct sockaddr *addr, socklen_t len, int r) {
	if (r != 0 && errno != EINPROGRESS)
		return; /* not connected: still late, the engine's at its next use */
	int saved = errno;
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 0);
	struct sockaddr_storage local;
	socklen_t llen = sizeof local;
	struct goxio_pair_key k;
	volatile uint64_t *pairs = __atomic_load_n(&early_pairs, __ATOMIC_ACQUIRE);
	int slot = -1;
	uint64_t word = 0;
	if (i != NULL && pairs != NULL && REAL(getsockname)(fd, (struct sockaddr *)&local, &llen) == 0 &&
	    goxio_pair_key_of(&k, (const struct sockaddr *)&local, llen, addr, len))
		slot = goxio_pair_register(pairs, &k, goxio_alive_lost() ? (uint32_t)getpid() : early_pid, early_start, &word);
	if (i == NULL) {
		goxio_late_birth(fd);
		errno = saved;
		return;
	}
	i->early.slot = slot;
	i->early.word = word;
	i->early.calls = 0;
	__atomic_fetch_or(&i->how, GOXIO_LAZY_EARLY_CON, __ATOMIC_SEQ_CST);
	/* No registration (no room in the table, or an entry of this connection already there):
	 * the engine takes the connected socket over now and decides as it would at connect. */
	if (slot < 0)
		goxio_late_birth(fd);
	errno = saved;
}

/* early_key sets the accepting end's key from the kernel's endpoints; 0 when it cannot. */
static int early_key(int fd, struct goxio_lazy_info *i) {
	if (__atomic_load_n(&i->early.keyed, __ATOMIC_ACQUIRE))
		return 1;
	struct sockaddr_storage local, peer;
	socklen_t ll = sizeof local, pl = sizeof peer;
	struct goxio_pair_key k;
	int saved = errno;
	int ok = REAL(getsockname)(fd, (struct sockaddr *)&local, &ll) == 0 &&
		 REAL(getpeername)(fd, (struct sockaddr *)&peer, &pl) == 0 &&
		 goxio_pair_key_of(&k, (const struct sockaddr *)&peer, pl, (const struct sockaddr *)&local, ll);
	errno = saved;
	if (ok)
		early_set_key(i, &k);
	return ok;
}

/* early_birth gives fd to the engine when no other data call is in the kernel: 1 when it did. */
static int early_birth(int fd, struct goxio_lazy_info *i) {
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_SEQ_CST);
	if (!(how & GOXIO_LAZY_LATE) || (how & GOXIO_LAZY_LATE_BIRTH) ||
	    !__atomic_compare_exchange_n(&i->how, &how, (how & ~GOXIO_LAZY_LATE) | GOXIO_LAZY_LATE_BIRTH, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return 0;
	if (__atomic_load_n(&i->early.inflight, __ATOMIC_SEQ_CST) != 0) {
		/* Another thread's call is in the kernel: its bytes are not counted yet. Back to
		 * late; a later call tries again. */
		uint32_t cur = __atomic_load_n(&i->how, __ATOMIC_SEQ_CST);
		while (!__atomic_compare_exchange_n(&i->how, &cur, (cur & ~GOXIO_LAZY_LATE_BIRTH) | GOXIO_LAZY_LATE, 0,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			;
		return 0;
	}
	goxio_early_hand(fd, i, how, 0);
	return 1;
}

/* early_in counts a call into the kernel; 0 when the connection stopped being late meanwhile
 * (the caller looks again). */
static int early_in(struct goxio_lazy_info *i) {
	__atomic_add_fetch(&i->early.inflight, 1, __ATOMIC_SEQ_CST);
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_SEQ_CST);
	if ((how & GOXIO_LAZY_LATE) && !(how & GOXIO_LAZY_LATE_BIRTH))
		return 1;
	__atomic_sub_fetch(&i->early.inflight, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void early_out(struct goxio_lazy_info *i) {
	int v = __atomic_load_n(&i->early.inflight, __ATOMIC_SEQ_CST);
	while (v > 0 && !__atomic_compare_exchange_n(&i->early.inflight, &v, v - 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* early_try_hand is a data call's step when the connection may go to the engine (the call is
 * counted in inflight): 0 when it handed it over (the caller goes on with the engine), 1 when
 * another call in the kernel kept it (this one goes to the kernel too, counted), -1 when it is no
 * longer late (look again). */
static int early_try_hand(int fd, struct goxio_lazy_info *i) {
	early_out(i);
	if (early_birth(fd, i))
		return 0;
	return early_in(i) ? 1 : -1;
}

/* lazy_early_enter is goxio_early_enter for a socket made before the engine loaded, in its early
 * phase (notes i, how): a receive goes to the kernel counted until its GOXIO_EARLY_UDP_CALLS-th
 * data call, which loads the engine (the caller goes on). */
static int lazy_early_enter(struct goxio_lazy_info *i, uint32_t how, int op) {
	if (goxio_early_dir(op) != 1 || (how & GOXIO_LAZY_EARLY_GONE) || goxio_sig_depth != 0 || goxio_in_vfork() ||
	    !goxio_engine_absent() || __atomic_load_n(&goxio_vma_api_used, __ATOMIC_RELAXED))
		return 0;
	__atomic_add_fetch(&i->early.inflight, 1, __ATOMIC_SEQ_CST);
	if ((__atomic_load_n(&i->how, __ATOMIC_SEQ_CST) & GOXIO_LAZY_EARLY_GONE) ||
	    __atomic_add_fetch(&i->early.calls, 1, __ATOMIC_SEQ_CST) >= GOXIO_EARLY_UDP_CALLS) {
		early_out(i);
		return 0;
	}
	return 1;
}

/* early_udp_dest reports whether a UDP socket may send to `to` (len bytes, read safely) in its
 * early phase: a destination the early phase keys (not a group, at most a sockaddr_in6), and, once
 * it started (how), the one it started with; 0: the engine sends. */
static int early_udp_dest(struct goxio_lazy_info *i, uint32_t how, const struct sockaddr *to, socklen_t len) {
	if (len > (socklen_t)sizeof i->early.key || goxio_ksend_key(to, len) == 0 || goxio_dest_group(to))
		return 0;
	return !(how & GOXIO_LAZY_EARLY_UDP) || ((socklen_t)__atomic_load_n(&i->early.keyed, __ATOMIC_ACQUIRE) == len &&
						 memcmp((const void *)i->early.key, to, len) == 0);
}

/* early_udp_begin starts the early phase of the UDP socket noted in i (how as read) toward `to`:
 * its destination and fresh counts, then the bits; 0 when another thread changed how meanwhile
 * (a birth that took LATE away wins: the engine sends). */
static int early_udp_begin(struct goxio_lazy_info *i, uint32_t how, const struct sockaddr *to, socklen_t len, uint32_t bits) {
	memset((void *)i->early.key, 0, sizeof i->early.key);
	memcpy((void *)i->early.key, to, len);
	i->early.calls = 0;
	i->early.krx = i->early.ktx = 0;
	__atomic_store_n(&i->early.keyed, (uint32_t)len, __ATOMIC_RELEASE);
	return __atomic_compare_exchange_n(&i->how, &how, how | bits, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

int goxio_lazy_early_send(struct goxio_lazy_info *i, const struct sockaddr *to, socklen_t len) {
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	if ((how & (GOXIO_LAZY_LATE | GOXIO_LAZY_LATE_BIRTH | GOXIO_LAZY_EARLY_GONE | GOXIO_LAZY_MCAST)) ||
	    !early_udp_dest(i, how, to, len) ||
	    (!(how & GOXIO_LAZY_EARLY_UDP) && !early_udp_begin(i, how, to, len, GOXIO_LAZY_EARLY_UDP | GOXIO_LAZY_KERNEL_DST)))
		return 0;
	return __atomic_add_fetch(&i->early.calls, 1, __ATOMIC_SEQ_CST) < GOXIO_EARLY_UDP_CALLS;
}

int goxio_lazy_early_end(struct goxio_lazy_info *i) {
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	if (!(how & GOXIO_LAZY_EARLY_UDP) || (how & (GOXIO_LAZY_LATE | GOXIO_LAZY_LATE_BIRTH)))
		return 0;
	__atomic_fetch_or(&i->how, GOXIO_LAZY_EARLY_GONE, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&i->early.inflight, __ATOMIC_SEQ_CST) != 0;
}

int goxio_early_enter(int fd, int op) {
	for (;;) {
		struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 0);
		if (i == NULL)
			return 0;
		uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
		if (!(how & (GOXIO_LAZY_EARLY_ACC | GOXIO_LAZY_EARLY_CON | GOXIO_LAZY_EARLY_UDP)))
			return 0;
		if ((how & GOXIO_LAZY_EARLY_UDP) && !(how & (GOXIO_LAZY_LATE | GOXIO_LAZY_LATE_BIRTH)))
			return lazy_early_enter(i, how, op);
		if (how & GOXIO_LAZY_LATE_BIRTH) {
			/* Another thread hands it over (or tries to): wait for the outcome. */
			while (__atomic_load_n(&i->how, __ATOMIC_ACQUIRE) & GOXIO_LAZY_LATE_BIRTH)
				sched_yield();
			continue;
		}
		if (!(how & GOXIO_LAZY_LATE) || goxio_early_dir(op) == 0 || !((how & GOXIO_LAZY_EARLY_UDP) ? early_udp_ok() : early_ok()))
			return 0; /* the caller's birth (late.c) hands it over, or makes it plain */
		if ((how & GOXIO_LAZY_EARLY_UDP) && op != GOXIO_OP_SENDTO && goxio_early_dir(op) != 1)
			return 0; /* write, writev, sendmsg: the caller's birth hands it over */
		if (!early_in(i))
			continue;
		if (how & (GOXIO_LAZY_EARLY_CON | GOXIO_LAZY_EARLY_UDP)) {
			int after = (how & GOXIO_LAZY_EARLY_UDP) ? GOXIO_EARLY_UDP_CALLS : early_after;
			if (__atomic_add_fetch(&i->early.calls, 1, __ATOMIC_SEQ_CST) < after)
				return 1;
			int r = early_try_hand(fd, i);
			if (r < 0)
				continue;
			return r;
		}
		if (!early_key(fd, i))
			return 1; /* no endpoints (the peer reset it): the kernel says so */
		struct goxio_pair_key k;
		memcpy(k.w, (const void *)i->early.key, sizeof k.w);
		int st = goxio_pair_lookup(early_pairs, &k);
		if (st == GOXIO_PAIR_READY) {
			int r = early_try_hand(fd, i);
			if (r < 0)
				continue;
			return r;
		}
		if (st == GOXIO_PAIR_NONE &&
		    (__atomic_load_n(&i->early.krx, __ATOMIC_ACQUIRE) > 0 || goxio_clock_ns(CLOCK_MONOTONIC) - i->early.since > early_grace)) {
			/* A goxio peer registers before it sends: this one is not, and never pairs. */
			early_out(i);
			if (goxio_late_plain(fd))
				goxio_late_count_plain();
			return 2;
		}
		return 1;
	}
}

void goxio_early_leave(int fd, int op, int rflags, long r) {
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 0);
	if (i == NULL)
		return;
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	if (!(how & (GOXIO_LAZY_EARLY_ACC | GOXIO_LAZY_EARLY_CON | GOXIO_LAZY_EARLY_UDP)))
		return;
	if (how & GOXIO_LAZY_EARLY_UDP) {
		/* datagrams: sends in the counters the engine adds to the socket's statistics
		 * (tx: packets, bytes, EAGAIN, errors), receives in krx (datagrams) and ktx (bytes) */
		if (goxio_early_dir(op) == 2)
			goxio_ksend_count(i->tx, r);
		else if (r >= 0 && !(rflags & MSG_PEEK)) {
			__atomic_add_fetch(&i->early.krx, 1, __ATOMIC_SEQ_CST);
			__atomic_add_fetch(&i->early.ktx, (uint64_t)r, __ATOMIC_SEQ_CST);
		}
		early_out(i);
		return;
	}
	if (r > 0) {
		if (goxio_early_dir(op) == 2)
			__atomic_add_fetch(&i->early.ktx, (uint64_t)r, __ATOMIC_SEQ_CST);
		else if (!(rflags & (MSG_PEEK | MSG_OOB)))
			__atomic_add_fetch(&i->early.krx, (uint64_t)r, __ATOMIC_SEQ_CST);
	}
	early_out(i);
}

int goxio_early_kernel_op(int fd, int op) {
	if (op != GOXIO_OP_GETSOCKNAME && op != GOXIO_OP_GETPEERNAME && op != GOXIO_OP_GETSOCKOPT)
		return 0;
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 0);
	return i != NULL && (goxio_early_is(i) || goxio_early_udp_is(i));
}

int goxio_early_shutdown(int fd, int how) {
	struct goxio_lazy_info *i = goxio_lazy_info_of(fd, 0);
	if (i == NULL || !goxio_early_is(i) || !early_ok())
		return 0;
	uint32_t bits = (how == SHUT_RD || how == SHUT_RDWR ? GOXIO_LAZY_EARLY_SHUT_RD : 0) |
			(how == SHUT_WR || how == SHUT_RDWR ? GOXIO_LAZY_EARLY_SHUT_WR : 0);
	__atomic_fetch_or(&i->how, bits, __ATOMIC_SEQ_CST);
	return 1;
}

void goxio_early_hand(int fd, struct goxio_lazy_info *i, uint32_t how, int nopair) {
	int saved = errno;
	int acc = (how & GOXIO_LAZY_EARLY_ACC) != 0, udp = (how & GOXIO_LAZY_EARLY_UDP) != 0;
	struct goxio_early_handover h = {
		.how = udp ? 0 : acc ? GOXIO_LAZY_ACCEPTED : GOXIO_LAZY_CONNECTED,
		.listener = i->early.listener,
		.domain = i->ref & 0xff,
		.type = goxio_late_type(fd, i, how),
		.protocol = (int32_t)((unsigned)i->ref >> 16),
		.calls = __atomic_load_n(&i->early.calls, __ATOMIC_SEQ_CST),
		.options = (how & GOXIO_LAZY_LATE_OPTS) != 0,
		.shut = ((how & GOXIO_LAZY_EARLY_SHUT_RD) ? 1 : 0) | ((how & GOXIO_LAZY_EARLY_SHUT_WR) ? 2 : 0),
		.nopair = nopair,
		.krx = __atomic_load_n(&i->early.krx, __ATOMIC_SEQ_CST),
		.ktx = __atomic_load_n(&i->early.ktx, __ATOMIC_SEQ_CST),
		.age_ns = acc ? goxio_clock_ns(CLOCK_MONOTONIC) - i->early.since : 0,
	};
	if (udp) {
		h.udp = 1;
		h.rx[0] = __atomic_load_n(&i->early.krx, __ATOMIC_SEQ_CST);
		h.rx[1] = __atomic_load_n(&i->early.ktx, __ATOMIC_SEQ_CST);
		for (int k = 0; k < GOXIO_KSEND_COUNTERS; k++)
			h.tx[k] = __atomic_load_n(&i->tx[k], __ATOMIC_SEQ_CST);
		memcpy(&h.dst, (const void *)i->early.key, sizeof h.dst);
	}
	if (goxio_active() && goxio_eng.early != NULL) {
		/* The engine's registration must not let other threads in before it is complete (the
		 * counts are the transport's K): the fd keeps GOXIO_FD_LAZY meanwhile (fdtable.c), so
		 * they wait for LATE_BIRTH to go. */
		goxio_early_handing_fd = fd;
		GOXIO_ENTER(goxio_eng.early(fd, &h));
		goxio_early_handing_fd = -1;
	}
	/* The engine took the registration over (same slot, its own word) or let it go: ours is
	 * dropped only if nobody took it. */
	goxio_early_forget(i, how);
	uint8_t fl = goxio_fd_flags(fd);
	if (fl & GOXIO_FD_LAZY)
		goxio_fdt_set(fd, fl & ~GOXIO_FD_LAZY);
	memset((void *)&i->early, 0, sizeof i->early);
	__atomic_store_n(&i->how, 0, __ATOMIC_RELEASE);
	errno = saved;
}

void goxio_early_closed(const struct goxio_lazy_info *i) {
	if (goxio_early_is(i))
		__atomic_add_fetch(early_closed_word, 1, __ATOMIC_RELAXED);
	else if (goxio_early_udp_is(i))
		goxio_late_count_plain(); /* a UDP socket served by the kernel alone, as a plain one */
}

/*
 * A UDP socket in its early phase. A late UDP socket (made with the engine loaded) whose first
 * call is a sendto to a destination not known to have no goxio receiver (late.c makes it plain
 * for good when ksend.c's cache knows) sends through the kernel, which a goxio receiver reads
 * too, and receives from the kernel: it is in no directory, so nothing reaches it through a
 * ring. So a socket per request (socket, sendto, recvfrom, close: a resolver, a health check,
 * an RPC client) to a goxio server never enters the engine, whose socket object, inbox and
 * directory entry it would pay for at every request (measured on the 2-CPU test machine, both
 * ends on one CPU: a goxio client's round 1.3x the kernel's with them). At its GOXIO_EARLY_UDP_CALLS-th
 * data call (a socket that keeps talking: the sendto after a request and its answer), or at
 * any other use, the engine takes it over (goxio_early_hand: Engine.AdoptEarly) with its sends
 * counted and its destination, where its first ring datagram is marked so that it does not
 * overtake the kernel's (offload/transport/shm kernelfirst.go). A send to another destination
 * hands it over first; so do write, writev and sendmsg. select and poll wait on the kernel
 * socket (loader.c's goxio_lazy_waits), getsockname, getpeername and getsockopt are the
 * kernel's. A hand-over while a call of another thread is in the kernel makes the socket plain
 * for good instead (late.c), as does a fork.
 *
 * A UDP socket made before the engine loaded has the same early phase (lazy_ksend.c sends, here
 * its receives: lazy_early_enter): its third data call loads the engine, whose adoption takes
 * the destination (GOXIO_LAZY_KERNEL_DST) after goxio_lazy_early_end found no call of it in the
 * kernel (else it is plain for good, loader.c). A process that makes a socket per request to a
 * goxio server thus loads no engine at all: loaded, its runtime's threads took the pinned CPU
 * from the ping-pong now and then (1.5-1.8x the kernel's p99, 1.2x without).
 */
int goxio_early_udp_send(struct goxio_lazy_info *i, const struct sockaddr *to, socklen_t len, int flags) {
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_ACQUIRE);
	if ((flags & ~GOXIO_KSEND_FLAGS) != 0 || !early_udp_ok() || !goxio_ksend_readable(to, len) ||
	    !early_udp_dest(i, how, to, len))
		return 0;
	if (how & GOXIO_LAZY_EARLY_UDP)
		return 1; /* the destination of its early phase: the data trampoline serves it */
	if ((how & (GOXIO_LAZY_EARLY_ACC | GOXIO_LAZY_EARLY_CON | GOXIO_LAZY_LATE_BIRTH)) || !(how & GOXIO_LAZY_LATE))
		return 0;
	/* What the engine would have learnt at this send: the next sockets to a destination without
	 * a goxio receiver are plain from their first send or connect on (late.c). */
	goxio_ksend_learn(to, len);
	return early_udp_begin(i, how, to, len, GOXIO_LAZY_EARLY_UDP);
}

void goxio_early_forget(struct goxio_lazy_info *i, uint32_t how) {
	volatile uint64_t *pairs = __atomic_load_n(&early_pairs, __ATOMIC_ACQUIRE);
	if ((how & GOXIO_LAZY_EARLY_CON) && pairs != NULL && i->early.word != 0) {
		goxio_pair_drop(pairs, i->early.slot, i->early.word);
		i->early.word = 0;
	}
}

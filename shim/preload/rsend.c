/*
 * rsend.c: sends into a goxio receiver's ring, made by the trampoline without the engine.
 *
 * A UDP send through the engine costs a trip into Go (~75 ns for the call, as much again for the
 * runtime's callback mechanics) and the engine's bookkeeping: a sockperf UDP throughput sender
 * spent ~480 ns a datagram, of which appending the record to the ring is ~100. So the engine
 * leaves, per fd, the description of the last ring route a send of the fd took (struct
 * goxio_txroute, shim/goxio.h): the destination's key, the outlet's producer (struct goxio_prod,
 * which the engine's own sends use under the same lock), the record's name and the receiver's
 * doorbell. The next send to the same destination appends the record here, as the engine's
 * Outlet.Send would (offload/shm outlet.go, ring.go), while everything the route depends on is
 * unchanged:
 *
 *   - the fd's route is there (the engine drops it when the fd closes, is replaced or connects);
 *   - the socket's gate holds the value it had (0 once the socket closes, is shut for writing or
 *     goes back to the kernel);
 *   - the discovery directory's generation is the route's (a socket bound, connected or closed
 *     anywhere in the namespace moves it);
 *   - the socket's count of sends through the kernel is the route's: the ring datagram after a
 *     kernel one must carry the mark that makes the receiver take its kernel socket's datagrams
 *     first (offload/transport/shm order.go), which the engine writes;
 *   - the outlet is open under the same epoch, its inbox not closed, the ring not detached, and
 *     the record fits (the receive-buffer limit, the ring's space): a full ring's drop or EAGAIN
 *     is the engine's to decide and count;
 *   - flags the rings honour only, no capture attached, not in a signal handler, no vfork child
 *     or forked child of the engine's process (goxio_active);
 *   - the payload and the destination address lie on pages a send of this thread read through
 *     the engine before (struct goxio_pages; ks_page): a bad pointer reaches the engine, which
 *     answers EFAULT as the kernel does.
 *
 * Any other case enters the engine, which sends as before and leaves the route again. The record,
 * the producer's counters, the ring's statistics and the socket's ring tx counters are written as
 * the engine writes them; a receiver that needs a wake-up gets its doorbell rung from here.
 */
#include "preload.h"
#include "box.h"
#include "ring_layout.h"

#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>

_Static_assert(offsetof(struct goxio_prod, epoch) == 8 && offsetof(struct goxio_prod, tail) == 16 &&
		       offsetof(struct goxio_prod, capacity) == 56 && offsetof(struct goxio_prod, st_wake) == 88 &&
		       sizeof(struct goxio_prod) == 128,
	       "struct goxio_prod as offload/shm prod_unsafe.go has it");
_Static_assert(sizeof(((struct goxio_txroute *)0)->name) >= GOXIO_RING_MAX_NAME, "a record's name fits");

/* The flags the rings honour (offload/transport/shm send.go, sendFlags). */
#define RS_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_CONFIRM)

/* A route and its sequence: odd while the engine writes it (rs_mu serializes the writers). */
struct rs_slot {
	uint32_t seq;
	uint32_t pad_;
	struct goxio_txroute r;
};

/* Routes by fd (kept for the fd number, never freed: a reader may hold one). rs_mu serializes
 * the writers of the routes. */
GOXIO_COLD static void **routes_chunks[GOXIO_FD_SLOTS];
static struct goxio_fd_slots routes = {.chunks = routes_chunks, .size = sizeof(struct rs_slot), .mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t rs_mu = PTHREAD_MUTEX_INITIALIZER;
volatile int goxio_rsend_fds;

static struct rs_slot *rs_of(int fd, int make) { return goxio_fd_slot(&routes, fd, make); }

/* rs_write stores r (NULL: no route) into s; rs_mu is held. */
static void rs_write(struct rs_slot *s, const struct goxio_txroute *r) {
	int had = s->r.key != 0, has = r != NULL && r->key != 0;
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (has)
		memcpy(&s->r, r, sizeof s->r);
	else
		__atomic_store_n(&s->r.key, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
	if (had != has)
		__atomic_add_fetch(&goxio_rsend_fds, has ? 1 : -1, __ATOMIC_RELAXED);
}

void goxio_rsend_set(int fd, const struct goxio_txroute *route, const struct sockaddr *dst, socklen_t len) {
	struct goxio_txroute r = *route;
	r.key = goxio_ksend_key(dst, len);
	pthread_mutex_lock(&rs_mu);
	struct rs_slot *s = rs_of(fd, 1);
	if (s != NULL)
		rs_write(s, &r);
	pthread_mutex_unlock(&rs_mu);
}

void goxio_rsend_drop(int fd) {
	struct rs_slot *s = rs_of(fd, 0);
	if (s == NULL || __atomic_load_n(&s->r.key, __ATOMIC_RELAXED) == 0)
		return;
	pthread_mutex_lock(&rs_mu);
	rs_write(s, NULL);
	pthread_mutex_unlock(&rs_mu);
}

/* rs_read copies fd's route into *r: 0 when there is none or the engine is writing it. */
static int rs_read(const struct rs_slot *s, struct goxio_txroute *r) {
	uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
	if ((seq & 1) != 0 || __atomic_load_n(&s->r.key, __ATOMIC_RELAXED) == 0)
		return 0;
	memcpy(r, &s->r, sizeof *r);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq;
}

/* tx_pages: the pages of program memory the engine read for this thread's sends. */
static __thread __attribute__((tls_model("initial-exec"))) struct goxio_pages tx_pages;

void goxio_rsend_seen(const void *buf, size_t n, const struct sockaddr *to, socklen_t tolen) {
	goxio_pages_note(&tx_pages, buf, n);
	goxio_ksend_seen(to, tolen);
}

static inline uint64_t *word(uint64_t base, unsigned off) { return (uint64_t *)(uintptr_t)(base + off); }

/* bump adds n to a counter whose writers all hold one lock. */
static inline void bump(uint64_t *w, uint64_t n) {
	__atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* rec_size is the ring space a record of n payload bytes takes (offload/shm recSize). */
static inline uint64_t rec_size(uint64_t n) {
	return (GOXIO_RING_HDR + n + GOXIO_RING_ALIGN - 1) & ~(uint64_t)(GOXIO_RING_ALIGN - 1);
}

/* rec_word packs a record's first word (offload/shm recWord). */
static inline uint64_t rec_word(uint64_t len, uint64_t namelen, uint64_t kind, uint64_t pos) {
	return (len & ((1u << 24) - 1)) | (namelen & 63) << 24 | (kind & 3) << 30 |
	       (uint64_t)(uint32_t)(pos / GOXIO_RING_ALIGN) << 32;
}

/* charge is what used unread bytes and one more record of rec bytes cost in a receive-buffer
 * limit (offload/shm producer.fits). */
static inline uint64_t charge(uint64_t used, uint64_t rec) {
	return used + used / rec * GOXIO_RING_SKB_OVERHEAD + rec + GOXIO_RING_SKB_OVERHEAD;
}

/* fits is the producer's receive-buffer check (offload/shm producer.fits); p's lock is held. */
static int fits(struct goxio_prod *p, uint64_t n, uint64_t limit) {
	uint64_t rec = rec_size(n), used = p->tail - p->head_cache;
	if (charge(used, rec) <= limit)
		return 1;
	uint64_t h = __atomic_load_n(word(p->ring, GOXIO_RING_HEAD), __ATOMIC_ACQUIRE);
	if (h > p->tail || p->tail - h > p->capacity || h < p->head_cache)
		return 0; /* the engine reports the corruption */
	p->head_cache = h;
	used = p->tail - h;
	return used == 0 || charge(used, rec) <= limit;
}

/* put appends one data record (name, n bytes at buf) to p's ring and publishes it, as the
 * engine's Outlet.Send does; 1 when it did (*wake: the receiver needs its doorbell), 0 when the
 * engine must serve the send (closed, detached, full, corrupt). p's lock is held. */
static int put(struct goxio_prod *p, const struct goxio_txroute *r, const void *buf, uint64_t n, int *wake) {
	uint64_t ring = p->ring, ib = p->inbox, cap = p->capacity;
	int ok = 0;
	/* busy brackets the closed check and the publish (a full barrier before the loads): a
	 * receiver that seals its inbox either is seen here or sees us and waits (Inbox.Seal) */
	__atomic_exchange_n(word(ring, GOXIO_RING_BUSY), 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(word(ib, GOXIO_RING_IB_CLOSED), __ATOMIC_SEQ_CST) != 0 ||
	    __atomic_load_n(word(ring, GOXIO_RING_DETACHED), __ATOMIC_SEQ_CST) != 0)
		goto out;
	uint64_t limit = __atomic_load_n(word(ib, GOXIO_RING_IB_LIMIT), __ATOMIC_RELAXED);
	if (limit != 0 && !fits(p, n, limit))
		goto out;
	uint64_t rec = rec_size(n), tail = p->tail, off = tail & (cap - 1), need = rec, pad = 0;
	if (off + rec > cap) {
		pad = cap - off;
		need += pad;
	}
	if (need > cap - (tail - p->head_cache)) {
		uint64_t h = __atomic_load_n(word(ring, GOXIO_RING_HEAD), __ATOMIC_ACQUIRE);
		if (h > tail || tail - h > cap || (h & (GOXIO_RING_ALIGN - 1)) != 0 || h < p->head_cache)
			goto out;
		p->head_cache = h;
		if (need > cap - (tail - h))
			goto out;
	}
	uint64_t data = ring + GOXIO_RING_DATA_OFF;
	if (pad != 0) {
		__atomic_store_n(word(data, (unsigned)off), rec_word(pad / GOXIO_RING_ALIGN, 0, GOXIO_RING_KIND_PAD, tail),
				 __ATOMIC_RELEASE);
		off = 0;
	}
	/* payload and name first; the word last publishes the record to a consumer polling it */
	if (n != 0)
		memcpy((void *)(uintptr_t)(data + off + GOXIO_RING_HDR), buf, n);
	memcpy((void *)(uintptr_t)(data + off + GOXIO_RING_NAME_OFF), r->name, r->namelen);
	__atomic_store_n(word(data, (unsigned)off), rec_word(n, r->namelen, GOXIO_RING_KIND_DATA, tail + pad),
			 __ATOMIC_RELEASE);
	p->tail = tail + pad + rec;
	p->pushed++;
	__atomic_store_n(word(ring, GOXIO_RING_PUSHED), p->pushed, __ATOMIC_RELAXED);
	__atomic_exchange_n(word(ring, GOXIO_RING_TAIL), p->tail, __ATOMIC_SEQ_CST); /* before the wake loads */
	/* the wake protocol's sender half (offload/shm wake.go, needWake) */
	int32_t spinners = __atomic_load_n((int32_t *)(uintptr_t)(ib + GOXIO_RING_IB_SPINNERS), __ATOMIC_SEQ_CST);
	uint32_t *pending = (uint32_t *)(uintptr_t)(ib + GOXIO_RING_IB_WAKE), zero = 0;
	*wake = spinners <= 0 && __atomic_load_n(pending, __ATOMIC_SEQ_CST) == 0 &&
		__atomic_compare_exchange_n(pending, &zero, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	if (*wake) {
		p->wakes++;
		__atomic_store_n(word(ring, GOXIO_RING_WAKES), p->wakes, __ATOMIC_RELAXED);
	}
	/* the ring's statistics: every writer holds p's lock (Outlet.send counts there too), so
	 * plain additions, stored atomically for the readers */
	if (p->st_tx != 0) {
		bump(word(p->st_tx, 0), 1);
		bump(word(p->st_tx, 8), n);
	}
	if (*wake && p->st_wake != 0)
		bump(word(p->st_wake, 0), 1);
	ok = 1;
out:
	/* a release store: nothing of the receiver's is loaded after it in this send, and the next
	 * one begins with the exchange above (offload/shm wake.go: plain stores where nothing of the
	 * other side is loaded next) */
	__atomic_store_n(word(ring, GOXIO_RING_BUSY), 0, __ATOMIC_RELEASE);
	return ok;
}

/* ring_bell sends one byte to the receiver's doorbell (offload/transport/shm bell.go, ringBell):
 * a full doorbell already has a wake-up pending. A byte sent tells the engine's next spin
 * (goxio_ksend_rang). */
static void ring_bell(const struct goxio_txroute *r) {
	static const char b = 0;
	if (r->ringer < 0 || r->bell_len == 0 || r->bell_len > sizeof r->bell)
		return;
	for (int i = 0; i < 3; i++) {
		if (syscall(SYS_sendto, r->ringer, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, r->bell, (socklen_t)r->bell_len) >= 0) {
			goxio_ksend_rang(); /* as ringBell's wait.Woke */
			return;
		}
		if (errno != EINTR)
			return;
	}
}

int goxio_rsend(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tolen, long *ret) {
	const struct rs_slot *s = rs_of(fd, 0);
	if (s == NULL || (flags & ~RS_FLAGS) != 0 || goxio_sig_depth != 0 || !goxio_active())
		return 0;
	uint64_t key = 0;
	if (to != NULL && (key = goxio_ksend_page_key(to, tolen)) == 0)
		return 0;
	if (!goxio_pages_ok(&tx_pages, buf, n))
		return 0;
	struct goxio_txroute r;
	if (!rs_read(s, &r) || (to != NULL ? key != r.key || to->sa_family != r.family : !r.peer) || n > r.max)
		return 0;
	if (__atomic_load_n(word(r.gate, 0), __ATOMIC_ACQUIRE) != r.gate_val ||
	    __atomic_load_n(word(r.kcount, 0), __ATOMIC_ACQUIRE) != r.kseen || !goxio_ksend_gen_is(r.gen) ||
	    goxio_ksend_capturing())
		return 0;
	struct goxio_prod *p = (struct goxio_prod *)(uintptr_t)r.prod;
	int wake = 0, ok = 0;
	spin_lock(&p->lock);
	if (p->open && p->epoch == r.epoch)
		ok = put(p, &r, buf, n, &wake);
	spin_release(&p->lock); /* the engine's side of the lock (prodState.acquire) needs no more */
	if (!ok)
		return 0;
	__atomic_add_fetch(word(r.sock_tx, 0), 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(word(r.sock_tx, 8), n, __ATOMIC_RELAXED);
	if (wake) {
		int saved = errno;
		ring_bell(&r);
		errno = saved;
	}
	*ret = (long)n;
	return 1;
}

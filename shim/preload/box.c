/*
 * box.c: the boxes, ring records queued per fd for receives that do not enter the engine.
 *
 * Entering the engine costs more than copying a small datagram (~75 ns for the call alone, and the
 * engine's bookkeeping: a sockperf UDP throughput receiver spent ~400 ns a datagram, most of it
 * there). So each fd of a ring socket may have a box (struct goxio_zbox, shim/goxio.h): when a
 * receive enters the engine, the engine also queues in the box the datagrams that wait in the
 * rings after the one it returns (held in their records: the senders see them as unread), and the
 * next receives take them from here. VMA's recvfrom_zcopy hands them over in place
 * (vma_records.c); the plain receives (read, recv, recvfrom: goxio_box_recv) copy them out as the
 * engine would, and leave the freed record's token in the box, which the engine folds in at its
 * next look at the socket's rings. The engine's own receives, polls and epoll waits take queued
 * records first (offload/shm/hold_box.go): order and readiness are as if they were still in the
 * rings.
 *
 * What the plain receives copy, they copy under the box's lock: the engine detaches the box under
 * the same lock before it unmaps the socket's rings (a close by another thread), so a copy never
 * reads a ring that is gone. They write only program memory that the engine wrote for the
 * calling thread before (rx_ok): a bad address reaches the engine, which answers EFAULT as the
 * kernel does, where writing it here would crash the program.
 */
#include "box.h"
#include "vma.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Boxes by fd: a table of BOX_CHUNK pointers per chunk, chunks made on demand; a box is made when
 * the engine first wants one for the fd and kept for the fd number (the engine detaches it from a
 * socket before the number can name another one). */
#define BOX_CHUNK 1024
GOXIO_COLD static struct goxio_zbox **box_chunks[GOXIO_FDT_SIZE / BOX_CHUNK];
static pthread_mutex_t box_mu = PTHREAD_MUTEX_INITIALIZER;

struct goxio_zbox *box_of(int fd, int make) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE)
		return NULL;
	struct goxio_zbox **chunk = __atomic_load_n(&box_chunks[fd / BOX_CHUNK], __ATOMIC_ACQUIRE);
	struct goxio_zbox *b = chunk ? __atomic_load_n(&chunk[fd % BOX_CHUNK], __ATOMIC_ACQUIRE) : NULL;
	if (b != NULL || !make)
		return b;
	pthread_mutex_lock(&box_mu);
	chunk = box_chunks[fd / BOX_CHUNK];
	if (chunk == NULL && (chunk = calloc(BOX_CHUNK, sizeof *chunk)) != NULL)
		__atomic_store_n(&box_chunks[fd / BOX_CHUNK], chunk, __ATOMIC_RELEASE);
	if (chunk != NULL && (b = chunk[fd % BOX_CHUNK]) == NULL && (b = calloc(1, sizeof *b)) != NULL)
		__atomic_store_n(&chunk[fd % BOX_CHUNK], b, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&box_mu);
	return b;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* A holder that lost its CPU gets it back through sched_yield. */
void spin_lock(uint32_t *l) {
	for (int i = 0; __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE); i++)
		while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
			if (++i > 100)
				sched_yield();
			else
				cpu_relax();
		}
}

/* The box's spin lock, shared with the engine (which holds it for a few loads and stores too). The
 * release is sequentially consistent: a free reads urgent after it (box_defer). */
static void box_lock(struct goxio_zbox *b) { spin_lock(&b->lock); }

static void box_unlock(struct goxio_zbox *b) { __atomic_store_n(&b->lock, 0, __ATOMIC_SEQ_CST); }

int box_take(struct goxio_zbox *b, struct goxio_zent *e, uint32_t *epoch) {
	if (b == NULL || __atomic_load_n(&b->count, __ATOMIC_ACQUIRE) == 0)
		return 0;
	box_lock(b);
	int ok = b->attached && !b->front && b->count > 0 && b->head < GOXIO_ZBOX_ENTRIES;
	if (ok) {
		*e = b->ent[b->head];
		b->head = (b->head + 1) % GOXIO_ZBOX_ENTRIES;
		__atomic_store_n(&b->count, b->count - 1, __ATOMIC_RELEASE);
		*epoch = b->epoch;
	}
	box_unlock(b);
	return ok;
}

int box_defer(struct goxio_zbox *b, uint64_t token, uint32_t epoch, int *urgent) {
	if (b == NULL || epoch == 0 || !goxio_active())
		return 0; /* a forked child's engine is its parent's: the engine call answers it */
	box_lock(b);
	int ok = b->attached && b->epoch == epoch && b->nfree < GOXIO_ZBOX_FREES;
	if (ok) {
		b->freed[b->nfree] = token;
		__atomic_store_n(&b->nfree, b->nfree + 1, __ATOMIC_RELEASE);
		if (b->nfree >= GOXIO_ZBOX_FREES * 3 / 4)
			*urgent = 1; /* fold them in before the box fills */
	}
	box_unlock(b); /* sequentially consistent: the engine's urgent store and fold pair with it */
	if (ok && __atomic_load_n(&b->urgent, __ATOMIC_SEQ_CST))
		*urgent = 1;
	return ok;
}

/* ---- plain receives ---- */

/* rx_wait[fd]: 0 while the plain receives on fd ask the engine to queue in its box; RX_NEVER once
 * the engine said the socket never does (a stream socket); otherwise how many plain receives take
 * the trampoline's way (an ordinary engine call) before one asks again. A receive that asked and
 * found nothing to queue sets RX_BACKOFF: a request-response exchange, where a datagram never
 * waits behind another, pays the queueing's look (~50 ns) at one receive in RX_BACKOFF + 1.
 * Forgotten when the number names a new socket of the engine (goxio_box_fd_new); threads update
 * it without a lock (a lost update changes only which receive asks next). */
GOXIO_COLD static volatile uint8_t rx_wait[GOXIO_FDT_SIZE];
#define RX_NEVER 255
#define RX_BACKOFF 16

void goxio_box_fd_new(int fd) {
	if ((unsigned)fd < GOXIO_FDT_SIZE && rx_wait[fd])
		rx_wait[fd] = 0;
}

/* rx_pages: the pages of program memory (number + 1; 0: none) that the engine wrote for this
 * thread's plain receives, the most recent RX_PAGES of them. A program that receives into the
 * same buffer (and the same address structure) finds its pages here from its second receive on.
 * A page the program unmaps or protects after the engine wrote it is the one case where a copy
 * here faults where the kernel would answer EFAULT: the program then passed memory it had given
 * up (ksend.c reads destination addresses under the same rule). */
#define RX_PAGES 4
#define RX_PAGE_SHIFT 12 /* the smallest page: a larger one is validated 4 KiB at a time */
static __thread __attribute__((tls_model("initial-exec"))) uintptr_t rx_pages[RX_PAGES];
static __thread __attribute__((tls_model("initial-exec"))) unsigned rx_next;

static int rx_known(uintptr_t pg) {
	for (int i = 0; i < RX_PAGES; i++)
		if (rx_pages[i] == pg + 1)
			return 1;
	return 0;
}

/* rx_ok reports whether every page of p..p+len is one the engine wrote for this thread. */
static int rx_ok(const void *p, size_t len) {
	if (len == 0)
		return 1;
	uintptr_t a = (uintptr_t)p, first = a >> RX_PAGE_SHIFT, last = (a + len - 1) >> RX_PAGE_SHIFT;
	if (last < first || last - first >= RX_PAGES)
		return 0;
	for (uintptr_t pg = first; pg <= last; pg++)
		if (!rx_known(pg))
			return 0;
	return 1;
}

/* rx_note records the pages of p..p+len, which the engine has just written for this thread. */
static void rx_note(const void *p, size_t len) {
	if (p == NULL || len == 0)
		return;
	uintptr_t a = (uintptr_t)p, first = a >> RX_PAGE_SHIFT, last = (a + len - 1) >> RX_PAGE_SHIFT;
	if (last < first || last - first >= RX_PAGES)
		return;
	for (uintptr_t pg = first; pg <= last; pg++)
		if (!rx_known(pg))
			rx_pages[rx_next++ % RX_PAGES] = pg + 1;
}

/* box_copy takes the oldest record queued in b and delivers it as the engine's recvfrom does
 * (offload/transport/udpcall rx.go, Deliver): the payload truncated to n (the result its full
 * length with MSG_TRUNC), the source address to what *fromlen allows and its full length in
 * *fromlen (both only when from and fromlen are given). 0 when it cannot (nothing queued, the engine has the front, memory not known writable):
 * the engine serves the call. */
static int box_copy(int fd, struct goxio_zbox *b, void *buf, size_t n, int flags, struct sockaddr *from,
		    socklen_t *fromlen, long *ret) {
	if (__atomic_load_n(&b->count, __ATOMIC_ACQUIRE) == 0)
		return 0;
	int named = from != NULL && fromlen != NULL;
	if (named && !rx_ok(fromlen, sizeof *fromlen))
		return 0;
	uint64_t token = 0;
	uint32_t epoch = 0;
	size_t c = 0, len = 0;
	box_lock(b);
	int ok = b->attached && !b->front && b->count > 0 && b->head < GOXIO_ZBOX_ENTRIES;
	if (ok) {
		const struct goxio_zent *e = &b->ent[b->head];
		size_t nl = e->namelen <= sizeof e->name ? e->namelen : sizeof e->name;
		size_t l = named && *fromlen < nl ? *fromlen : nl;
		len = e->len;
		c = len < n ? len : n;
		ok = rx_ok(buf, c) && (!named || rx_ok(from, l));
		if (ok) {
			memcpy(buf, e->data, c);
			if (named) {
				memcpy(from, e->name, l);
				*fromlen = (socklen_t)nl;
			}
			token = e->token;
			epoch = b->epoch;
			b->head = (b->head + 1) % GOXIO_ZBOX_ENTRIES;
			__atomic_store_n(&b->count, b->count - 1, __ATOMIC_RELEASE);
		}
	}
	box_unlock(b);
	if (!ok)
		return 0;
	int urgent = 0;
	int deferred = box_defer(b, token, epoch, &urgent);
	if (!deferred || urgent) {
		/* the record goes back now (a refusal: the socket let its records go already) */
		int saved = errno;
		goxio_call(GOXIO_OP_ZCOPY_FREE, fd, (uintptr_t)&token, deferred ? 0 : 1, 0, 0, 0);
		errno = saved;
	}
	*ret = (long)((flags & MSG_TRUNC) ? len : c);
	return 1;
}

int goxio_box_recv(int fd, int op, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *fromlen,
		   long *ret) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE || (flags & (MSG_PEEK | MSG_ERRQUEUE | MSG_OOB)) != 0 ||
	    (op == GOXIO_OP_READ && n == 0) || __atomic_load_n(&goxio_vma_cbs, __ATOMIC_RELAXED) != 0 ||
	    goxio_sig_depth != 0 || !goxio_active())
		return 0;
	uint8_t wait = __atomic_load_n(&rx_wait[fd], __ATOMIC_RELAXED);
	if (wait == RX_NEVER)
		return 0;
	struct goxio_zbox *b = box_of(fd, 0);
	if (b != NULL && box_copy(fd, b, buf, n, flags, from, fromlen, ret))
		return 1;
	if (wait != 0) {
		__atomic_store_n(&rx_wait[fd], wait - 1, __ATOMIC_RELAXED);
		return 0;
	}
	int named = from != NULL && fromlen != NULL;
	socklen_t old = 0; /* the address room the engine may write, when it can be read here */
	if (named && rx_ok(fromlen, sizeof *fromlen))
		old = *fromlen;
	struct goxio_zcopy z = {.buf = buf, .len = n, .flags = flags, .op = op, .from = from, .fromlen = fromlen, .box = b};
	long r = goxio_call(GOXIO_OP_ZCOPY_RECV, fd, (uintptr_t)&z, 0, 0, 0, 0);
	int saved = errno;
	if (z.advice & GOXIO_ZCOPY_NOBOX)
		__atomic_store_n(&rx_wait[fd], RX_NEVER, __ATOMIC_RELAXED);
	else if ((z.advice & GOXIO_ZCOPY_BOX) && b == NULL)
		box_of(fd, 1);
	else if (r >= 0 && z.queued == 0)
		__atomic_store_n(&rx_wait[fd], RX_BACKOFF, __ATOMIC_RELAXED);
	if (r >= 0) {
		rx_note(buf, (size_t)r < n ? (size_t)r : n);
		if (named) {
			rx_note(fromlen, sizeof *fromlen);
			rx_note(from, old < *fromlen ? old : *fromlen);
		}
	}
	errno = saved;
	*ret = r;
	return 1;
}

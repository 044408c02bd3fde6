/*
 * box.c: the boxes, ring records queued per fd for receives that do not enter the engine.
 *
 * Entering the engine costs more than copying a small datagram (~75 ns for the call alone, and the
 * engine's bookkeeping: a sockperf UDP throughput receiver spent ~400 ns a datagram, most of it
 * there). So each fd of a ring socket may have a box (struct goxio_zbox, shim/goxio.h): when a
 * receive enters the engine, the engine also queues in the box the datagrams that wait in the
 * rings after the one it returns (held in their records: the senders see them as unread), and the
 * next receives take them from here. VMA's recvfrom_zcopy hands them over in place
 * (vma_records.c); the plain receives (read, recv, recvfrom, recvmsg: goxio_box_recv) copy them out as the
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
#include <string.h>

/* Boxes by fd: a box is made when the engine first wants one for the fd and kept for the fd
 * number (the engine detaches it from a socket before the number can name another one). */
GOXIO_COLD static void **boxes_chunks[GOXIO_FD_SLOTS];
static struct goxio_fd_slots boxes = {.chunks = boxes_chunks, .size = sizeof(struct goxio_zbox), .mu = PTHREAD_MUTEX_INITIALIZER};

struct goxio_zbox *box_of(int fd, int make) { return goxio_fd_slot(&boxes, fd, make); }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* A holder that lost its CPU gets it back through sched_yield. The program's signal handlers wait
 * while the thread holds one (signal.c): a handler's socket or VMA call may need the same lock. */
void spin_lock(uint32_t *l) {
	goxio_sig_defer++;
	for (int i = 0; __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE); i++)
		while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
			if (++i > 100)
				sched_yield();
			else
				cpu_relax();
		}
}

/* The release is sequentially consistent: a free reads urgent after it (box_defer). */
void spin_unlock(uint32_t *l) {
	__atomic_store_n(l, 0, __ATOMIC_SEQ_CST);
	goxio_sig_undefer();
}

void spin_release(uint32_t *l) {
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
	goxio_sig_undefer();
}

/* The box's spin lock, shared with the engine (which holds it for a few loads and stores too). */
static void box_lock(struct goxio_zbox *b) { spin_lock(&b->lock); }

static void box_unlock(struct goxio_zbox *b) { spin_unlock(&b->lock); }

/* box_oldest returns the oldest record queued in b for the library to take, or NULL (none
 * queued, the box detached, or the engine has the front: it serves the next receive). b's lock
 * is held. */
static const struct goxio_zent *box_oldest(const struct goxio_zbox *b) {
	if (!b->attached || b->front || b->count == 0 || b->head >= GOXIO_ZBOX_ENTRIES)
		return NULL;
	return &b->ent[b->head];
}

/* box_pop takes the record box_oldest returned out of b. b's lock is held. */
static void box_pop(struct goxio_zbox *b) {
	b->head = (b->head + 1) % GOXIO_ZBOX_ENTRIES;
	__atomic_store_n(&b->count, b->count - 1, __ATOMIC_RELEASE);
}

int box_take(struct goxio_zbox *b, struct goxio_zent *e, uint32_t *epoch) {
	if (b == NULL || __atomic_load_n(&b->count, __ATOMIC_ACQUIRE) == 0)
		return 0;
	box_lock(b);
	const struct goxio_zent *o = box_oldest(b);
	if (o != NULL) {
		*e = *o;
		*epoch = b->epoch;
		box_pop(b);
	}
	box_unlock(b);
	return o != NULL;
}

/* box_free_locked leaves token in b's freed array: 1, or 0 when it is full. *urgent is set when
 * the array nears full. b's lock is held; the caller reads the urgent word after its release
 * (box_urgent). */
static int box_free_locked(struct goxio_zbox *b, uint64_t token, int *urgent) {
	if (b->nfree >= GOXIO_ZBOX_FREES)
		return 0;
	b->freed[b->nfree] = token;
	__atomic_store_n(&b->nfree, b->nfree + 1, __ATOMIC_RELEASE);
	if (b->nfree >= GOXIO_ZBOX_FREES * 3 / 4)
		*urgent = 1; /* fold them in before the box fills */
	return 1;
}

/* box_urgent sets *urgent when the engine wants deferred frees at once; read after the release of
 * b's lock, which is sequentially consistent: the engine's urgent store and fold pair with it. */
static void box_urgent(const struct goxio_zbox *b, int *urgent) {
	if (__atomic_load_n(&b->urgent, __ATOMIC_SEQ_CST))
		*urgent = 1;
}

int box_defer(struct goxio_zbox *b, uint64_t token, uint32_t epoch, int *urgent) {
	if (b == NULL || epoch == 0 || !goxio_active())
		return 0; /* a forked child's engine is its parent's: the engine call answers it */
	box_lock(b);
	int ok = b->attached && b->epoch == epoch && box_free_locked(b, token, urgent);
	box_unlock(b);
	if (ok)
		box_urgent(b, urgent);
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

/* rx_pages: the pages of program memory that the engine wrote for this thread's plain receives
 * (and the address structure's): pages written are pages the copies here may write. */
static __thread __attribute__((tls_model("initial-exec"))) struct goxio_pages rx_pages;

/* rx_ok reports whether every page of p..p+len is one the engine wrote for this thread. */
static int rx_ok(const void *p, size_t len) { return goxio_pages_ok(&rx_pages, p, len); }

/* rx_note records the pages of p..p+len, which the engine has just written for this thread. */
static void rx_note(const void *p, size_t len) { goxio_pages_note(&rx_pages, p, len); }

/* rx_call is a plain receive as the box path sees it: where the payload goes (iov: the program's
 * buffer for read, recv and recvfrom, the msghdr's array for recvmsg, at most RX_IOVS of them),
 * where the source address goes (from and *fromlen; fromlen NULL: nowhere), and for recvmsg its
 * msghdr (msg_flags and msg_controllen written). */
#define RX_IOVS 8
struct rx_call {
	const struct iovec *iov;
	size_t iovcnt;
	struct sockaddr *from;
	socklen_t *fromlen;
	struct msghdr *msg;
	int flags;
};

/* rx_fits reports whether the first c bytes scattered over the call's buffers land in memory known
 * writable (a NULL buffer never is: the engine answers EFAULT). */
static int rx_fits(const struct rx_call *rc, size_t c) {
	for (size_t i = 0; i < rc->iovcnt && c > 0; i++) {
		size_t part = rc->iov[i].iov_len < c ? rc->iov[i].iov_len : c;
		if (!rx_ok(rc->iov[i].iov_base, part))
			return 0;
		c -= part;
	}
	return 1;
}

/* rx_room is the room the call's buffers give. */
static size_t rx_room(const struct rx_call *rc) {
	size_t room = 0;
	for (size_t i = 0; i < rc->iovcnt; i++)
		room += rc->iov[i].iov_len;
	return room;
}

/* box_copy takes the oldest record queued in b and delivers it as the engine's receive does
 * (offload/transport/udpcall rx.go, Deliver): the payload scattered over the buffers and truncated
 * to them (the result its full length with MSG_TRUNC; recvmsg's msg_flags MSG_TRUNC when cut, its
 * msg_controllen 0), the source address to what *fromlen allows and its full length in *fromlen.
 * 0 when it cannot (nothing queued, the engine has the front, memory not known writable): the
 * engine serves the call. */
static int box_copy(int fd, struct goxio_zbox *b, const struct rx_call *rc, long *ret) {
	if (__atomic_load_n(&b->count, __ATOMIC_ACQUIRE) == 0)
		return 0;
	int named = rc->from != NULL && rc->fromlen != NULL;
	if (named && !rx_ok(rc->fromlen, sizeof *rc->fromlen))
		return 0;
	uint64_t token = 0;
	size_t c = 0, len = 0;
	int deferred = 0, urgent = 0;
	box_lock(b);
	const struct goxio_zent *e = box_oldest(b);
	int ok = e != NULL;
	if (ok) {
		size_t nl = e->namelen <= sizeof e->name ? e->namelen : sizeof e->name;
		size_t l = named && *rc->fromlen < nl ? *rc->fromlen : nl;
		size_t room = rx_room(rc);
		len = e->len;
		c = len < room ? len : room;
		ok = rx_fits(rc, c) && (!named || rx_ok(rc->from, l));
		if (ok) {
			const char *src = e->data;
			for (size_t i = 0, left = c; i < rc->iovcnt && left > 0; i++) {
				size_t part = rc->iov[i].iov_len < left ? rc->iov[i].iov_len : left;
				memcpy(rc->iov[i].iov_base, src, part);
				src += part;
				left -= part;
			}
			if (named) {
				memcpy(rc->from, e->name, l);
				*rc->fromlen = (socklen_t)nl;
			}
			if (rc->msg != NULL) {
				rc->msg->msg_flags = c < len ? MSG_TRUNC : 0;
				rc->msg->msg_controllen = 0;
			}
			token = e->token;
			box_pop(b);
			/* its free in the same hold of the lock (box_defer's, for a record of the box's
			 * epoch, in a process whose engine is active) */
			deferred = box_free_locked(b, token, &urgent);
		}
	}
	box_unlock(b);
	if (!ok)
		return 0;
	if (deferred)
		box_urgent(b, &urgent);
	if (!deferred || urgent) {
		/* the record goes back now: the freed array is full, or the engine wants its frees */
		int saved = errno;
		goxio_call(GOXIO_OP_ZCOPY_FREE, fd, (uintptr_t)&token, deferred ? 0 : 1, 0, 0, 0);
		errno = saved;
	}
	*ret = (long)((rc->flags & MSG_TRUNC) ? len : c);
	return 1;
}

/* rx_kread serves the receive (op, z's arguments) from fd's kernel socket when box b says that no
 * sender has a ring to the socket (offload/shm/hold_box_kread.go) and a datagram or an error is
 * there, or the call does not wait (MSG_DONTWAIT, or the box says the socket is non-blocking):
 * 1 with the result in *ret, counted as a kernel receive. A call that waits and finds the kernel
 * socket empty waits here (goxio_kwait, kwait.c) and reads again. 0 when the box does not say
 * so, a capture may run (it records the kernel path's datagrams too), or the wait ends for the
 * engine (ring data, or no doorbell to wait on yet: the engine waits on the rings and the kernel
 * socket). The kernel reads the program's memory itself: a bad buffer is its EFAULT, as without
 * goxio. */
static int rx_kread(int fd, int op, const struct goxio_zcopy *z, struct goxio_zbox *b, long *ret) {
	if (!__atomic_load_n(&b->kread, __ATOMIC_ACQUIRE))
		return 0;
	int saved = errno;
	uint64_t deadline = 0;
	ssize_t r;
	for (;;) {
		if (goxio_ksend_capturing())
			return 0;
		uint64_t *ctr = NULL;
		int nowait = (z->flags & MSG_DONTWAIT) != 0;
		box_lock(b);
		if (kread_armed(b)) {
			ctr = b->krx;
			nowait |= b->knb != 0;
		} else {
			/* a sender registered (or the box went): the next receives skip the lock until
			 * the engine arms the box again */
			__atomic_store_n(&b->kread, 0, __ATOMIC_RELAXED);
		}
		spin_release(&b->lock); /* nothing of the engine's is loaded after it */
		if (ctr == NULL) {
			errno = saved;
			return 0;
		}
		switch (op) {
		case GOXIO_OP_READ:
			r = REAL(recvfrom)(fd, z->buf, z->len, MSG_DONTWAIT, NULL, NULL);
			break;
		case GOXIO_OP_RECVFROM:
			r = REAL(recvfrom)(fd, z->buf, z->len, z->flags | MSG_DONTWAIT, z->from, z->fromlen);
			break;
		case GOXIO_OP_RECVMSG:
			r = REAL(recvmsg)(fd, z->buf, z->flags | MSG_DONTWAIT);
			break;
		default:
			return 0;
		}
		if (r >= 0) {
			__atomic_add_fetch(&ctr[0], 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&ctr[1], (uint64_t)r, __ATOMIC_RELAXED);
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (!nowait) {
				/* a blocking receive: wait here for the kernel socket or the doorbell */
				int w = goxio_kwait(fd, b, &deadline);
				if (w > 0)
					continue;
				if (w == 0) {
					errno = saved;
					return 0;
				}
				break; /* SO_RCVTIMEO or a signal ended the wait: not a kernel read's
					* answer, uncounted as in the engine's wait */
			}
			__atomic_add_fetch(&ctr[2], 1, __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&ctr[3], 1, __ATOMIC_RELAXED);
		}
		break;
	}
	*ret = r;
	return 1;
}

/* rx_plain reports whether a plain receive on fd with flags may be served here: no peek, error
 * queue or MSG_OOB, no VMA receive callback, not in a signal handler, the process's engine. */
static int rx_plain(int fd, int flags) {
	return (unsigned)fd < GOXIO_FDT_SIZE && (flags & (MSG_PEEK | MSG_ERRQUEUE | MSG_OOB)) == 0 &&
	       __atomic_load_n(&goxio_vma_cbs, __ATOMIC_RELAXED) == 0 && goxio_sig_depth == 0 && goxio_active();
}

/* rx_serve serves rc (op, and z's arguments for the engine) from fd's box or through the engine;
 * see goxio_box_recv. */
static int rx_serve(int fd, int op, const struct rx_call *rc, struct goxio_zcopy *z, long *ret) {
	if (!rx_plain(fd, rc->flags))
		return 0;
	uint8_t wait = __atomic_load_n(&rx_wait[fd], __ATOMIC_RELAXED);
	if (wait == RX_NEVER)
		return 0;
	struct goxio_zbox *b = box_of(fd, 0);
	if (b != NULL && rc->iovcnt <= RX_IOVS && box_copy(fd, b, rc, ret))
		return 1;
	if (b != NULL && rx_kread(fd, op, z, b, ret))
		return 1;
	if (wait != 0) {
		__atomic_store_n(&rx_wait[fd], wait - 1, __ATOMIC_RELAXED);
		return 0;
	}
	int named = rc->from != NULL && rc->fromlen != NULL;
	socklen_t old = 0; /* the address room the engine may write, when it can be read here */
	if (named && rx_ok(rc->fromlen, sizeof *rc->fromlen))
		old = *rc->fromlen;
	z->op = op;
	z->box = b;
	long r = goxio_call(GOXIO_OP_ZCOPY_RECV, fd, (uintptr_t)z, 0, 0, 0, 0);
	int saved = errno;
	if (z->advice & GOXIO_ZCOPY_NOBOX)
		__atomic_store_n(&rx_wait[fd], RX_NEVER, __ATOMIC_RELAXED);
	else if ((z->advice & GOXIO_ZCOPY_BOX) && b == NULL)
		box_of(fd, 1);
	else if (r >= 0 && z->queued == 0)
		__atomic_store_n(&rx_wait[fd], RX_BACKOFF, __ATOMIC_RELAXED);
	if (r >= 0) {
		/* what the engine wrote: the payload, the address and its length, recvmsg's msghdr (whose
		 * buffer array the engine has just read: it is there to read) */
		const struct iovec *iov = rc->iov;
		size_t iovcnt = rc->iovcnt, left = (size_t)r;
		if (iov == NULL && rc->msg != NULL) {
			iov = rc->msg->msg_iov;
			iovcnt = rc->msg->msg_iovlen;
		}
		for (size_t i = 0; iov != NULL && i < iovcnt && i < RX_IOVS && left > 0; i++) {
			size_t part = iov[i].iov_len < left ? iov[i].iov_len : left;
			rx_note(iov[i].iov_base, part);
			left -= part;
		}
		if (named) {
			rx_note(rc->fromlen, sizeof *rc->fromlen);
			rx_note(rc->from, old < *rc->fromlen ? old : *rc->fromlen);
		}
		if (rc->msg != NULL)
			rx_note(rc->msg, sizeof *rc->msg);
	}
	errno = saved;
	*ret = r;
	return 1;
}

int goxio_box_recv(int fd, int op, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *fromlen,
		   long *ret) {
	if (op == GOXIO_OP_READ && n == 0)
		return 0; /* a read of nothing takes no datagram (the kernel's socket read) */
	struct iovec v = {buf, n};
	struct rx_call rc = {.iov = &v, .iovcnt = 1, .from = from, .fromlen = from != NULL ? fromlen : NULL, .flags = flags};
	struct goxio_zcopy z = {.buf = buf, .len = n, .flags = flags, .from = from, .fromlen = fromlen};
	return rx_serve(fd, op, &rc, &z, ret);
}

int goxio_box_recvmsg(int fd, struct msghdr *msg, int flags, long *ret) {
	struct rx_call rc = {.msg = msg, .flags = flags};
	/* The msghdr is read here only where the engine wrote it before (after a receive through it):
	 * anything else, a control buffer (the engine's receive answers with its length 0 and
	 * MSG_CTRUNC as the kernel does) or more buffers than a box copy scatters over, makes an
	 * ordinary engine call (which notes the msghdr's page for the next one), unless the kernel
	 * socket serves it (rx_kread: the kernel reads the msghdr itself). */
	if (msg != NULL && rx_ok(msg, sizeof *msg)) {
		if (msg->msg_controllen != 0 || msg->msg_iovlen > RX_IOVS ||
		    !rx_ok(msg->msg_iov, msg->msg_iovlen * sizeof *msg->msg_iov)) {
			struct goxio_zcopy z = {.buf = msg, .flags = flags};
			struct goxio_zbox *b = rx_plain(fd, flags) ? box_of(fd, 0) : NULL;
			return b != NULL && rx_kread(fd, GOXIO_OP_RECVMSG, &z, b, ret);
		}
		rc.iov = msg->msg_iov;
		rc.iovcnt = msg->msg_iovlen;
		rc.from = msg->msg_name;
		rc.fromlen = msg->msg_name != NULL ? &msg->msg_namelen : NULL;
	} else if (msg != NULL) {
		rc.iovcnt = RX_IOVS + 1; /* nothing known of it: no box copy, the engine's receive */
	} else {
		return 0;
	}
	struct goxio_zcopy z = {.buf = msg, .flags = flags};
	return rx_serve(fd, GOXIO_OP_RECVMSG, &rc, &z, ret);
}

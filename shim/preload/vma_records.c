/*
 * vma_records.c: held records, VMA's recvfrom_zcopy and free_packets.
 *
 * On a socket whose datagrams come through a shared-memory ring, recvfrom_zcopy is really
 * zero-copy: the engine (GOXIO_OP_ZCOPY_RECV) leaves the datagram in its ring record, held for the
 * program, and the iovec points at it there until free_packets gives it back
 * (GOXIO_OP_ZCOPY_FREE); the sender meanwhile finds the ring that much fuller (back-pressure).
 * Everywhere else (the kernel and AF_XDP transports, a datagram that came through the kernel
 * socket, a socket with a receive callback or spilled datagrams) a record is a buffer of
 * RECORD_CAP bytes the library owns, filled through the ordinary (interposed) recvfrom, so the
 * socket's transport, the engine's lazy load and the statistics all apply unchanged.
 *
 * The packet id the program sees is not an address but a handle (slot index and generation), so a
 * foreign or stale id is recognised without reading memory through it; a ring record's slot also
 * keeps the engine's token, which the engine checks again. Receive callbacks (vma_callback.c)
 * hold records the same way.
 *
 * Entering the engine costs more than copying a small datagram, so on a ring socket neither call
 * enters it for each datagram: each fd has a box (box.c) where the engine, at a zero-copy
 * receive, queues the datagrams that wait in the rings after the one it hands over (held in place
 * like it), and recvfrom_zcopy takes them from there; free_packets leaves the tokens of freed ring
 * records in the box, and the engine folds them in at its next look at the socket's rings, unless
 * the box's urgent word says a sender needs the space now.
 */
#include "vma.h"
#include "box.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct vma_packet_t) == 16 && sizeof(struct vma_packets_t) == 8, "VMA packet layout");
_Static_assert(sizeof(struct goxio_zcopy) == 80, "struct goxio_zcopy as offload/zcopy_unsafe.go reads it");
_Static_assert(sizeof(struct goxio_zent) == 56 && offsetof(struct goxio_zbox, freed) == 32 &&
		       offsetof(struct goxio_zbox, ent) == 32 + 8 * GOXIO_ZBOX_FREES &&
		       offsetof(struct goxio_zbox, kread) == 32 + 8 * GOXIO_ZBOX_FREES + 56 * GOXIO_ZBOX_ENTRIES &&
		       offsetof(struct goxio_zbox, krx) == offsetof(struct goxio_zbox, kread) + 24 &&
		       offsetof(struct goxio_zbox, kwake) == offsetof(struct goxio_zbox, kread) + 32 &&
		       offsetof(struct goxio_zbox, ktimeo) == offsetof(struct goxio_zbox, kread) + 40 &&
		       offsetof(struct goxio_zbox, kbell) == offsetof(struct goxio_zbox, kread) + 48 &&
		       offsetof(struct goxio_zbox, ksleep) == offsetof(struct goxio_zbox, kread) + 52 &&
		       sizeof(struct goxio_zbox) == offsetof(struct goxio_zbox, kread) + 56,
	       "struct goxio_zbox as offload/shm/hold_box_unsafe.go reads it");

/* ---- held records ---- */

struct record {
	char *buf;    /* RECORD_CAP bytes, kept across reuse of the slot */
	uint32_t gen;   /* bumped at every free: a stale handle no longer matches */
	int fd;         /* the socket holding it, -1 when free */
	int next;       /* next free slot, -1 at the end */
	int ring;       /* the data is a ring record the engine holds, token names it */
	uint64_t token;
	uint32_t epoch; /* of fd's box when the record came through it (0: its frees enter the engine) */
};

/* rec_mu guards the record table: a spin lock (held for a few loads and stores, and a realloc or
 * malloc when the table grows), cheaper than a mutex for the two takes of each datagram. */
static uint32_t rec_mu;

static void rec_lock(void) { spin_lock(&rec_mu); }

static void rec_unlock(void) { spin_unlock(&rec_mu); }
static struct record *recs;
static int nrecs, free_head = -1;

/* handle_of encodes slot i and its generation; 0 is never a handle. */
static void *handle_of(int i, uint32_t gen) { return (void *)(((uintptr_t)gen << 32) | (uintptr_t)(i + 1)); }

/* slot_of returns the slot of handle h if h is one this library gave fd and still held, else -1.
 * Called with rec_mu held. */
static int slot_of(void *h, int fd) {
	uintptr_t v = (uintptr_t)h;
	long i = (long)(v & 0xffffffffu) - 1;
	if (i < 0 || i >= nrecs)
		return -1;
	struct record *r = &recs[i];
	if (r->fd != fd || r->gen != (uint32_t)(v >> 32))
		return -1;
	return (int)i;
}

/* rec_slot reserves a slot for fd and returns it (buffer not made), or -1 with errno ENOMEM.
 * Called with rec_mu held. */
static int rec_slot(int fd) {
	int i = free_head;
	if (i >= 0) {
		free_head = recs[i].next;
	} else {
		int n = nrecs ? nrecs * 2 : 64;
		struct record *grown = realloc(recs, (size_t)n * sizeof *grown);
		if (grown == NULL) {
			errno = ENOMEM;
			return -1;
		}
		recs = grown;
		for (int j = n - 1; j > nrecs; j--) {
			recs[j] = (struct record){.buf = NULL, .gen = 1, .fd = -1, .next = free_head, .ring = 0};
			free_head = j;
		}
		i = nrecs;
		recs[i] = (struct record){.buf = NULL, .gen = 1, .fd = -1, .next = -1};
		nrecs = n;
	}
	recs[i].fd = fd;
	recs[i].ring = 0;
	recs[i].epoch = 0;
	return i;
}

/* rec_put returns slot i to the free list. Called with rec_mu held. */
static void rec_put(int i);

int rec_take(int fd, char **buf, void **handle) {
	rec_lock();
	int i = rec_slot(fd);
	if (i >= 0 && recs[i].buf == NULL && (recs[i].buf = malloc(RECORD_CAP)) == NULL) {
		rec_put(i);
		errno = ENOMEM;
		i = -1;
	}
	if (i >= 0) {
		*buf = recs[i].buf;
		*handle = handle_of(i, recs[i].gen);
	}
	rec_unlock();
	return i;
}

/* rec_take_ring reserves a slot for fd's ring record token (taken from its box at epoch) and
 * returns its handle, or NULL with errno ENOMEM. */
static void *rec_take_ring(int fd, uint64_t token, uint32_t epoch) {
	rec_lock();
	int i = rec_slot(fd);
	void *h = NULL;
	if (i >= 0) {
		recs[i].ring = 1;
		recs[i].token = token;
		recs[i].epoch = epoch;
		h = handle_of(i, recs[i].gen);
	}
	rec_unlock();
	return h;
}

static void rec_put(int i) {
	recs[i].fd = -1;
	recs[i].ring = 0;
	recs[i].gen++;
	if (recs[i].gen == 0)
		recs[i].gen = 1;
	recs[i].next = free_head;
	free_head = i;
}

void rec_release(int i) {
	rec_lock();
	rec_put(i);
	rec_unlock();
}

/* rec_ring marks slot i as holding the engine's ring record token (epoch: of the box the engine
 * used with it, 0: none). */
static void rec_ring(int i, uint64_t token, uint32_t epoch) {
	rec_lock();
	recs[i].ring = 1;
	recs[i].token = token;
	recs[i].epoch = epoch;
	rec_unlock();
}

/* zcopy_recv receives on s into data (RECORD_CAP bytes) or, from a ring, in place: 1 with *n the
 * datagram's length (or -1 and errno) when the engine served the call, *ring the payload's address
 * and *token its record when it is held in place (NULL: copied into data); 0 when the socket has no
 * ring the engine can hold datagrams in (then the ordinary recvfrom serves it). */
static int zcopy_recv(int s, char *data, int flags, struct sockaddr *from, socklen_t *fromlen, ssize_t *n,
		      void **ring, uint64_t *token, uint32_t *epoch) {
	uint8_t fl = served(s);
	if (!(fl & GOXIO_FD_RING) || (fl & GOXIO_FD_SPILL) || (flags & (MSG_PEEK | MSG_ERRQUEUE | MSG_OOB)) ||
	    __atomic_load_n(&goxio_vma_cbs, __ATOMIC_RELAXED) != 0)
		return 0;
	struct goxio_zcopy z = {.buf = data, .len = RECORD_CAP, .flags = flags, .from = from, .fromlen = fromlen,
				.box = box_of(s, 1)};
	int saved = errno;
	long r = goxio_call(GOXIO_OP_ZCOPY_RECV, s, (uintptr_t)&z, 0, 0, 0, 0);
	if (r < 0 && errno == EOPNOTSUPP) {
		errno = saved;
		return 0;
	}
	*n = r;
	*ring = r >= 0 ? z.data : NULL;
	*token = z.token;
	*epoch = z.epoch;
	return 1;
}

/* box_recv serves recvfrom_zcopy from the datagrams queued in s's box: 1 with the result in
 * *ret; 0 when the box has none for it (the engine serves it). */
static int box_recv(int s, void *buf, int in, struct sockaddr *from, socklen_t *fromlen, int *flags, int *ret) {
	struct goxio_zbox *b = box_of(s, 0);
	if (b == NULL || __atomic_load_n(&b->count, __ATOMIC_ACQUIRE) == 0 || (in & ~MSG_DONTWAIT) != 0 ||
	    __atomic_load_n(&goxio_vma_cbs, __ATOMIC_RELAXED) != 0)
		return 0;
	uint8_t fl = served(s);
	if (!(fl & GOXIO_FD_RING) || (fl & GOXIO_FD_SPILL))
		return 0;
	struct goxio_zent e;
	uint32_t epoch;
	if (!box_take(b, &e, &epoch))
		return 0;
	void *handle = rec_take_ring(s, e.token, epoch);
	if (handle == NULL) {
		/* no memory for the record: the datagram is lost, as the kernel drops what it cannot
		 * queue; its ring record goes back */
		goxio_call(GOXIO_OP_ZCOPY_FREE, s, (uintptr_t)&e.token, 1, 0, 0, 0);
		*ret = -1;
		errno = ENOMEM;
		return 1;
	}
	if (from != NULL && fromlen != NULL) {
		socklen_t nl = e.namelen <= sizeof e.name ? e.namelen : sizeof e.name;
		memcpy(from, e.name, nl < *fromlen ? nl : *fromlen);
		*fromlen = nl;
	}
	struct vma_packets_t *p = buf;
	p->n_packet_num = 1;
	p->pkts[0].packet_id = handle;
	p->pkts[0].sz_iov = 1;
	p->pkts[0].iov[0].iov_base = e.data;
	p->pkts[0].iov[0].iov_len = e.len;
	*flags = in | MSG_VMA_ZCOPY;
	*ret = (int)e.len;
	return 1;
}

/* ---- the members ---- */

int vma_recvfrom_zcopy(int s, void *buf, size_t len, int *flags, struct sockaddr *from, socklen_t *fromlen) {
	if (flags == NULL || (buf == NULL && len > 0)) {
		errno = EFAULT;
		return -1;
	}
	int in = *flags & ~(MSG_VMA_ZCOPY_FORCE | MSG_VMA_ZCOPY);
	size_t need = sizeof(struct vma_packets_t) + sizeof(struct vma_packet_t) + sizeof(struct iovec);
	if (len < need) {
		/* no room for the packet description: VMA copies the data instead, unless forced */
		if (*flags & MSG_VMA_ZCOPY_FORCE) {
			errno = ENOBUFS;
			return -1;
		}
		*flags = in & ~MSG_VMA_ZCOPY;
		return (int)recvfrom(s, buf, len, in, from, fromlen);
	}
	int ret;
	if (box_recv(s, buf, in, from, fromlen, flags, &ret))
		return ret;
	char *data;
	void *handle;
	int i = rec_take(s, &data, &handle); /* data stays put while the slot is taken */
	if (i < 0)
		return -1;
	/* MSG_WAITALL would wait for a whole record: the stream's bytes come as they are there */
	int rflags = in & ~(MSG_TRUNC | MSG_WAITALL);
	ssize_t n;
	void *ring = NULL;
	uint64_t token = 0;
	uint32_t epoch = 0;
	if (!zcopy_recv(s, data, rflags, from, fromlen, &n, &ring, &token, &epoch))
		n = recvfrom(s, data, RECORD_CAP, rflags, from, fromlen);
	if (ring != NULL) {
		rec_ring(i, token, epoch);
		data = ring;
	} else if (n <= 0 || (in & MSG_PEEK)) {
		int saved = errno;
		rec_release(i);
		errno = saved;
		if (n > 0 && (in & MSG_PEEK)) {
			/* a peek hands nothing over: the data stays queued; copy what fits */
			size_t c = (size_t)n < len ? (size_t)n : len;
			memcpy(buf, data, c);
			*flags = in;
			return (int)c;
		}
		return (int)n;
	}
	struct vma_packets_t *p = buf;
	p->n_packet_num = 1;
	p->pkts[0].packet_id = handle;
	p->pkts[0].sz_iov = 1;
	p->pkts[0].iov[0].iov_base = data;
	p->pkts[0].iov[0].iov_len = (size_t)n;
	*flags = in | MSG_VMA_ZCOPY;
	return (int)n;
}

/* FREE_BATCH is how many ring records free_packets gives back to the engine per engine call (the
 * engine's maxFreeBatch, offload/zcopy_unsafe.go): a program that frees several packets in one
 * call enters the engine once. */
#define FREE_BATCH 64

int vma_free_packets(int s, struct vma_packet_t *pkts, size_t count) {
	if (count > 0 && pkts == NULL) {
		errno = EFAULT;
		return -1;
	}
	uint64_t tokens[FREE_BATCH];
	size_t ntok = 0, done = 0;
	int refused = 0, urgent = 0;
	struct goxio_zbox *box = box_of(s, 0);
	rec_lock();
	/* every id is checked before any is freed: a bad array frees nothing */
	for (size_t k = 0; k < count; k++) {
		int i = slot_of(pkts[k].packet_id, s);
		for (size_t j = 0; i >= 0 && j < k; j++)
			if (pkts[j].packet_id == pkts[k].packet_id)
				i = -1; /* the same id twice in one call */
		if (i < 0) {
			rec_unlock();
			errno = ENOENT;
			return -1;
		}
	}
	/* Ring records go back through the box, or to the engine outside the lock, in batches; their
	 * slots are free as soon as the tokens are copied out (the program's ids are stale from now
	 * on). */
	while (done < count) {
		for (ntok = 0; done < count && ntok < FREE_BATCH; done++) {
			int i = slot_of(pkts[done].packet_id, s);
			if (i < 0) {
				refused = 1; /* another thread freed it while the lock was let go */
				continue;
			}
			if (recs[i].ring && !box_defer(box, recs[i].token, recs[i].epoch, &urgent))
				tokens[ntok++] = recs[i].token;
			rec_put(i);
		}
		if (ntok == 0 && !(urgent && done == count))
			continue;
		rec_unlock();
		/* refused: the socket was closed or replaced, which released its records already; the
		 * engine folds the box's deferred frees in first */
		if (goxio_call(GOXIO_OP_ZCOPY_FREE, s, (uintptr_t)tokens, ntok, 0, 0, 0) < 0 && ntok > 0)
			refused = 1;
		urgent = 0;
		rec_lock();
	}
	rec_unlock();
	if (refused) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

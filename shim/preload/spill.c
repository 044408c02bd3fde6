/*
 * spill.c: datagrams spilled at a fork.
 *
 * Before a fork the engine takes every datagram waiting in the rings of each shared-memory socket
 * and writes them into a region mapped MAP_SHARED | MAP_ANONYMOUS (offload/spill.go), so that the
 * parent and the child, which share the kernel socket, also share what the rings held; the socket
 * itself goes back to the kernel for good (a forked child never enters Go and cannot read rings).
 * Receives on a spill-flagged fd take those datagrams first, in the child here (pure C) and in
 * the parent too, then go on with the kernel socket. Each datagram is taken once: the region's
 * cursor moves by compare-and-swap.
 *
 * Region layout (little-endian, written by the engine before the fork, never after):
 *	u32 magic "SPLL" | u32 count | u32 cursor | u32 size | u32 offset[count]
 *	records at 8-aligned offsets: u32 len | u32 namelen | u8 name[32] | u8 data[len]
 *	(name: a sockaddr_in or sockaddr_in6)
 * Everything is checked against size before it is read.
 */
#include "preload.h"

#include <string.h>

#define SPILL_MAGIC 0x4c4c5053u
#define SPILL_SLOTS 64

struct spill_hdr {
	uint32_t magic, count, cursor, size;
	uint32_t off[];
};

struct spill_rec {
	uint32_t len, namelen;
	unsigned char name[32];
	unsigned char data[];
};

static struct {
	int fd;
	struct spill_hdr *h;
} spills[SPILL_SLOTS] GOXIO_COLD;
static int spill_lock;

/* goxio_spill_any is set once a region is given to an fd: until then select and poll never look
 * at spill regions (calls_iomux.c). */
int goxio_spill_any;

void goxio_spill_set(int fd, void *region) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE || region == NULL)
		return;
	while (__atomic_exchange_n(&spill_lock, 1, __ATOMIC_ACQUIRE))
		;
	int slot = -1;
	for (int i = 0; i < SPILL_SLOTS; i++) {
		if (spills[i].h != NULL && spills[i].fd == fd) {
			slot = i;
			break;
		}
		if (slot < 0 && (spills[i].h == NULL || !(goxio_fd_flags(spills[i].fd) & GOXIO_FD_SPILL)))
			slot = i;
	}
	if (slot >= 0) {
		spills[slot].fd = fd;
		__atomic_store_n(&spills[slot].h, (struct spill_hdr *)region, __ATOMIC_RELEASE);
		__atomic_fetch_or(&goxio_fdt[fd], (uint8_t)GOXIO_FD_SPILL, __ATOMIC_ACQ_REL);
		__atomic_store_n(&goxio_spill_any, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&spill_lock, 0, __ATOMIC_RELEASE);
}

static struct spill_hdr *spill_of(int fd) {
	for (int i = 0; i < SPILL_SLOTS; i++) {
		struct spill_hdr *h = __atomic_load_n(&spills[i].h, __ATOMIC_ACQUIRE);
		if (h != NULL && spills[i].fd == fd)
			return h;
	}
	return NULL;
}

/* rec_at returns record i of the region if it lies inside it. */
static const struct spill_rec *rec_at(const struct spill_hdr *h, uint32_t i) {
	uint64_t hdr = sizeof *h + (uint64_t)h->count * 4;
	if (h->magic != SPILL_MAGIC || i >= h->count || hdr > h->size)
		return NULL;
	uint32_t off = h->off[i];
	if (off < hdr || off % 8 != 0 || (uint64_t)off + sizeof(struct spill_rec) > h->size)
		return NULL;
	const struct spill_rec *r = (const void *)((const char *)h + off);
	if (r->namelen > sizeof r->name || (uint64_t)off + sizeof *r + r->len > h->size)
		return NULL;
	return r;
}

int goxio_spill_recv(int fd, const struct iovec *iov, size_t iovcnt, int flags, void *name, socklen_t *namelen,
		     int *msgflags, long *ret) {
	if (goxio_in_vfork())
		return 0; /* the fd may be another socket in the child (closed and reused there) */
	struct spill_hdr *h = spill_of(fd);
	if (h == NULL)
		return 0;
	for (;;) {
		uint32_t c = __atomic_load_n(&h->cursor, __ATOMIC_ACQUIRE);
		const struct spill_rec *r = rec_at(h, c);
		if (r == NULL)
			return 0;
		size_t copied = 0;
		for (size_t k = 0; k < iovcnt && copied < r->len; k++) {
			size_t n = iov[k].iov_len < r->len - copied ? iov[k].iov_len : r->len - copied;
			if (n > 0)
				memcpy(iov[k].iov_base, r->data + copied, n);
			copied += n;
		}
		if (name != NULL && namelen != NULL) {
			socklen_t n = *namelen < r->namelen ? *namelen : r->namelen;
			memcpy(name, r->name, n);
			*namelen = r->namelen;
		}
		if (msgflags != NULL)
			*msgflags = copied < r->len ? MSG_TRUNC : 0;
		*ret = (flags & MSG_TRUNC) ? (long)r->len : (long)copied;
		if (flags & MSG_PEEK)
			return 1;
		if (__atomic_compare_exchange_n(&h->cursor, &c, c + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return 1;
		/* another reader (the other process, another thread) took it: the next one */
	}
}

int goxio_spill_pending(void) {
	if (!__atomic_load_n(&goxio_spill_any, __ATOMIC_RELAXED) || goxio_in_vfork())
		return 0; /* a vfork child's epoll waits are the kernel's (and write no edge records) */
	for (int i = 0; i < SPILL_SLOTS; i++) {
		struct spill_hdr *h = __atomic_load_n(&spills[i].h, __ATOMIC_ACQUIRE);
		if (h != NULL && (goxio_fd_flags(spills[i].fd) & GOXIO_FD_SPILL) &&
		    rec_at(h, __atomic_load_n(&h->cursor, __ATOMIC_ACQUIRE)) != NULL)
			return 1;
	}
	return 0;
}

const void *goxio_spill_region(int fd) { return spill_of(fd); }

int goxio_spill_ready(int fd) {
	if (!(goxio_fd_flags(fd) & GOXIO_FD_SPILL) || goxio_in_vfork())
		return 0;
	struct spill_hdr *h = spill_of(fd);
	return h != NULL && rec_at(h, __atomic_load_n(&h->cursor, __ATOMIC_ACQUIRE)) != NULL;
}

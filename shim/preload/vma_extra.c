/*
 * vma_extra.c: VMA's extra socket API (goxio_extra.h): the API object getsockopt(SO_VMA_GET_API)
 * returns, the members goxio provides, and the refusing stubs of the others.
 *
 * Held records (recvfrom_zcopy, free_packets): a record is a buffer of RECORD_CAP bytes the library
 * owns; recvfrom_zcopy receives into it through the ordinary (interposed) recvfrom, so the socket's
 * transport, the engine's lazy load and the statistics all apply unchanged, and hands it to the
 * program until free_packets. The packet id the program sees is not an address but a handle (slot
 * index and generation), so a foreign or stale id is recognised without reading memory through it.
 */
#include "preload.h"
#include "trampoline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "../goxio_extra.h"

_Static_assert(sizeof(struct vma_api_t) == 21 * 8, "vma_api_t: 21 slots of 8 bytes");
_Static_assert(sizeof(struct vma_packet_t) == 16 && sizeof(struct vma_packets_t) == 8, "VMA packet layout");

/* RECORD_CAP holds the largest UDP datagram (65507 bytes) and a large TCP read. */
#define RECORD_CAP 65536

/* ---- held records ---- */

struct record {
	char *buf;    /* RECORD_CAP bytes, kept across reuse of the slot */
	uint32_t gen; /* bumped at every free: a stale handle no longer matches */
	int fd;       /* the socket holding it, -1 when free */
	int next;     /* next free slot, -1 at the end */
};

static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
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

/* rec_take reserves a record for fd: its slot, buffer and handle, or -1 with errno ENOMEM. */
static int rec_take(int fd, char **buf, void **handle) {
	pthread_mutex_lock(&rec_mu);
	int i = free_head;
	if (i >= 0) {
		free_head = recs[i].next;
	} else {
		int n = nrecs ? nrecs * 2 : 64;
		struct record *grown = realloc(recs, (size_t)n * sizeof *grown);
		if (grown == NULL) {
			pthread_mutex_unlock(&rec_mu);
			errno = ENOMEM;
			return -1;
		}
		recs = grown;
		for (int j = n - 1; j > nrecs; j--) {
			recs[j] = (struct record){.buf = NULL, .gen = 1, .fd = -1, .next = free_head};
			free_head = j;
		}
		i = nrecs;
		recs[i] = (struct record){.buf = NULL, .gen = 1, .fd = -1, .next = -1};
		nrecs = n;
	}
	if (recs[i].buf == NULL && (recs[i].buf = malloc(RECORD_CAP)) == NULL) {
		recs[i].next = free_head;
		free_head = i;
		pthread_mutex_unlock(&rec_mu);
		errno = ENOMEM;
		return -1;
	}
	recs[i].fd = fd;
	*buf = recs[i].buf;
	*handle = handle_of(i, recs[i].gen);
	pthread_mutex_unlock(&rec_mu);
	return i;
}

/* rec_put returns slot i to the free list. Called with rec_mu held. */
static void rec_put(int i) {
	recs[i].fd = -1;
	recs[i].gen++;
	if (recs[i].gen == 0)
		recs[i].gen = 1;
	recs[i].next = free_head;
	free_head = i;
}

/* ---- members goxio provides ---- */

static int vma_recvfrom_zcopy(int s, void *buf, size_t len, int *flags, struct sockaddr *from, socklen_t *fromlen) {
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
	char *data;
	void *handle;
	int i = rec_take(s, &data, &handle); /* data stays put while the slot is taken */
	if (i < 0)
		return -1;
	/* MSG_WAITALL would wait for a whole record: the stream's bytes come as they are there */
	ssize_t n = recvfrom(s, data, RECORD_CAP, in & ~(MSG_TRUNC | MSG_WAITALL), from, fromlen);
	if (n <= 0 || (in & MSG_PEEK)) {
		int saved = errno;
		pthread_mutex_lock(&rec_mu);
		rec_put(i);
		pthread_mutex_unlock(&rec_mu);
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

static int vma_free_packets(int s, struct vma_packet_t *pkts, size_t count) {
	if (count > 0 && pkts == NULL) {
		errno = EFAULT;
		return -1;
	}
	pthread_mutex_lock(&rec_mu);
	/* every id is checked before any is freed: a bad array frees nothing */
	for (size_t k = 0; k < count; k++) {
		int i = slot_of(pkts[k].packet_id, s);
		for (size_t j = 0; i >= 0 && j < k; j++)
			if (pkts[j].packet_id == pkts[k].packet_id)
				i = -1; /* the same id twice in one call */
		if (i < 0) {
			pthread_mutex_unlock(&rec_mu);
			errno = ENOENT;
			return -1;
		}
	}
	for (size_t k = 0; k < count; k++)
		rec_put(slot_of(pkts[k].packet_id, s));
	pthread_mutex_unlock(&rec_mu);
	return 0;
}

/* served reports the table flags of a socket the engine serves, loading the engine first for a
 * socket made before it was; 0 for any other fd. */
static uint8_t served(int fd) {
	uint8_t fl = goxio_fd_flags(fd);
	if (fl & GOXIO_FD_LAZY) {
		goxio_lazy_fd(fd);
		fl = goxio_fd_flags(fd);
	}
	if (!(fl & GOXIO_FD_ENGINE) || !goxio_active())
		return 0;
	return fl;
}

static int vma_get_socket_rings_num(int fd) {
	uint8_t fl = served(fd);
	if (fl == 0) {
		errno = EINVAL;
		return -1;
	}
	return (fl & GOXIO_FD_RING) ? 1 : 0;
}

static int vma_get_socket_rings_fds(int fd, int *ring_fds, int ring_fds_sz) {
	uint8_t fl = served(fd);
	if (fl == 0 || ring_fds == NULL || ring_fds_sz < 0) {
		errno = EINVAL;
		return -1;
	}
	if (!(fl & GOXIO_FD_RING) || ring_fds_sz == 0)
		return 0;
	ring_fds[0] = fd; /* readable through select, poll and epoll when the ring holds data */
	return 1;
}

/* ---- receive callbacks ---- */

/* A registered callback: the socket is known by number and by inode, so a callback never outlives
 * its socket into another one that reuses the number. */
struct callback {
	int fd;
	dev_t dev;
	ino_t ino;
	vma_recv_callback_t cb;
	void *ctx;
	struct sockaddr_in local; /* the socket's address when registered: vma_info_t.dst */
};

#define MAX_CALLBACKS 256

static pthread_mutex_t cb_mu = PTHREAD_MUTEX_INITIALIZER;
static struct callback cbs[MAX_CALLBACKS];
static int ncbs;

/* goxio_vma_cbs counts the registered callbacks: the receive trampolines look for one only while it
 * is not zero (calls_io.c). */
GOXIO_HIDDEN volatile int goxio_vma_cbs;

/* in_callback is set while this thread receives for a callback or runs one: receives made then go
 * the ordinary way. */
static __thread int in_callback;

/* callback_of copies fd's callback into *out; 0 when it has none (or only a closed socket had). */
static int callback_of(int fd, struct callback *out) {
	struct stat st;
	int found = 0, saved = errno;
	pthread_mutex_lock(&cb_mu);
	for (int i = 0; i < ncbs; i++) {
		if (cbs[i].fd != fd)
			continue;
		if (fstat(fd, &st) == 0 && st.st_dev == cbs[i].dev && st.st_ino == cbs[i].ino) {
			*out = cbs[i];
			found = 1;
		} else {
			cbs[i] = cbs[--ncbs]; /* the socket it was for is gone */
			__atomic_store_n(&goxio_vma_cbs, ncbs, __ATOMIC_RELAXED);
		}
		break;
	}
	pthread_mutex_unlock(&cb_mu);
	errno = saved;
	return found;
}

static int vma_register_recv_callback(int s, vma_recv_callback_t cb, void *ctx) {
	int type = 0;
	socklen_t tl = sizeof type;
	struct stat st;
	if (served(s) == 0 || getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_DGRAM ||
	    fstat(s, &st) != 0) {
		errno = EINVAL; /* not a UDP socket the library serves */
		return -1;
	}
	struct sockaddr_in local = {0};
	socklen_t ll = sizeof local;
	getsockname(s, (struct sockaddr *)&local, &ll);
	pthread_mutex_lock(&cb_mu);
	int i = 0;
	while (i < ncbs && cbs[i].fd != s)
		i++;
	if (cb == NULL) {
		if (i < ncbs)
			cbs[i] = cbs[--ncbs];
	} else if (i == MAX_CALLBACKS) {
		pthread_mutex_unlock(&cb_mu);
		errno = ENOMEM;
		return -1;
	} else {
		cbs[i] = (struct callback){.fd = s, .dev = st.st_dev, .ino = st.st_ino, .cb = cb, .ctx = ctx, .local = local};
		if (i == ncbs)
			ncbs++;
	}
	__atomic_store_n(&goxio_vma_cbs, ncbs, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&cb_mu);
	return 0;
}

/* goxio_vma_cb_recv serves a receive on fd when fd has a receive callback: each datagram goes to
 * the callback before the program sees it; DROP discards it and HOLD hands its record to the
 * program (free_packets returns it), both then wait for the next datagram as the receive would;
 * RECV delivers it as the receive call asked. 1 with *ret set when it served the call, 0 when the
 * call goes on the ordinary way (no callback, a peek, an error-queue or out-of-band read, a receive
 * made from inside a callback). */
GOXIO_HIDDEN int goxio_vma_cb_recv(int fd, const struct iovec *iov, size_t iovcnt, int flags, void *name,
				   socklen_t *namelen, int *msgflags, long *ret) {
	struct callback c;
	if (in_callback || (flags & (MSG_PEEK | MSG_ERRQUEUE | MSG_OOB)) || !callback_of(fd, &c))
		return 0;
	in_callback = 1;
	for (;;) {
		char *data;
		void *handle;
		int i = rec_take(fd, &data, &handle);
		if (i < 0) {
			*ret = -1;
			break;
		}
		struct sockaddr_storage src;
		socklen_t sl = sizeof src;
		ssize_t n = recvfrom(fd, data, RECORD_CAP, flags & ~MSG_TRUNC, (struct sockaddr *)&src, &sl);
		if (n < 0) {
			int saved = errno;
			pthread_mutex_lock(&rec_mu);
			rec_put(i);
			pthread_mutex_unlock(&rec_mu);
			errno = saved;
			*ret = -1;
			break;
		}
		struct iovec v = {data, (size_t)n};
		struct vma_info_t info = {.struct_sz = sizeof info, .packet_id = handle, .payload_sz = (size_t)n};
		info.src = (struct sockaddr_in *)&src;
		info.dst = &c.local;
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		info.sw_timestamp = now;
		vma_recv_callback_retval_t verdict = c.cb(fd, 1, &v, &info, c.ctx);
		if (verdict == VMA_PACKET_HOLD)
			continue; /* the program holds the record until free_packets */
		if (verdict != VMA_PACKET_RECV) {
			pthread_mutex_lock(&rec_mu);
			rec_put(i);
			pthread_mutex_unlock(&rec_mu);
			continue;
		}
		size_t off = 0;
		for (size_t k = 0; k < iovcnt && off < (size_t)n; k++) {
			size_t m = (size_t)n - off < iov[k].iov_len ? (size_t)n - off : iov[k].iov_len;
			memcpy(iov[k].iov_base, data + off, m);
			off += m;
		}
		if (name != NULL && namelen != NULL) {
			socklen_t m = *namelen < sl ? *namelen : sl;
			memcpy(name, &src, m);
			*namelen = sl;
		}
		if (msgflags != NULL)
			*msgflags = off < (size_t)n ? MSG_TRUNC : 0;
		*ret = (flags & MSG_TRUNC) ? (long)n : (long)off;
		pthread_mutex_lock(&rec_mu);
		rec_put(i);
		pthread_mutex_unlock(&rec_mu);
		break;
	}
	in_callback = 0;
	return 1;
}

/* ---- threads whose new sockets stay with the kernel (thread_offload) ---- */

#define MAX_KERNEL_THREADS 256

static pthread_mutex_t thr_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t kernel_threads[MAX_KERNEL_THREADS];

/* goxio_vma_kernel_threads counts the threads thread_offload(0, tid) named: socket() looks for its
 * thread among them only while it is not zero (calls_socket.c). */
GOXIO_HIDDEN volatile int goxio_vma_kernel_threads;

static int vma_thread_offload(int offload, pthread_t tid) {
	pthread_mutex_lock(&thr_mu);
	int n = goxio_vma_kernel_threads, i = 0;
	while (i < n && !pthread_equal(kernel_threads[i], tid))
		i++;
	if (offload && i < n) {
		kernel_threads[i] = kernel_threads[n - 1];
		n--;
	} else if (!offload && i == n) {
		if (n == MAX_KERNEL_THREADS) {
			pthread_mutex_unlock(&thr_mu);
			errno = ENOMEM;
			return -1;
		}
		kernel_threads[n++] = tid;
	}
	__atomic_store_n(&goxio_vma_kernel_threads, n, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&thr_mu);
	return 0;
}

/* goxio_vma_thread_kernel reports whether sockets this thread makes stay with the kernel. */
GOXIO_HIDDEN int goxio_vma_thread_kernel(void) {
	pthread_t self = pthread_self();
	int found = 0;
	pthread_mutex_lock(&thr_mu);
	for (int i = 0; i < goxio_vma_kernel_threads && !found; i++)
		found = pthread_equal(kernel_threads[i], self);
	pthread_mutex_unlock(&thr_mu);
	return found;
}

/* ---- members the engine serves ---- */

/* engine_result turns the engine's 0 or -errno into the C convention. */
static int engine_result(long r) {
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

/* need_engine loads the engine if it is not yet; ENODEV when it cannot run here (a signal
 * handler, a vfork child, a forked child of a process that had it, a failed load). */
static int need_engine(void) {
	if (goxio_engine_need() && goxio_active())
		return 1;
	errno = ENODEV;
	return 0;
}

static int vma_add_conf_rule(const char *line) {
	if (line == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (!need_engine())
		return -1;
	return engine_result(goxio_eng.vma_rule(line));
}

static int vma_dump_fd_stats(int fd, int level) {
	if (!need_engine())
		return -1;
	return engine_result(goxio_eng.vma_dump(fd, level));
}

/* NETWORK_HEADER_LEN is the size of the headers get_socket_network_header gives: Ethernet II,
 * IPv4 without options, UDP. */
#define NETWORK_HEADER_LEN (14 + 20 + 8)

static void put16(unsigned char *p, unsigned v) {
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void put_mac(unsigned char *p, uint64_t m) {
	for (int i = 0; i < 6; i++)
		p[i] = (unsigned char)(m >> (8 * (5 - i)));
}

/* vma_get_socket_network_header writes the Ethernet, IPv4 and UDP headers of the connected UDP
 * socket fd's datagrams: MACs, addresses, ports, TOS, TTL and the DF flag as they would be sent;
 * the fields that differ per datagram (lengths, IPv4 id, checksums) are zero. */
static int vma_get_socket_network_header(int fd, void *ptr, uint16_t *len) {
	int type = 0;
	socklen_t tl = sizeof type;
	if (len == NULL || served(fd) == 0) {
		errno = EINVAL; /* not a socket the library serves */
		return -1;
	}
	struct sockaddr_in self = {0}, peer = {0};
	socklen_t sl = sizeof self, pl = sizeof peer;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_DGRAM ||
	    getsockname(fd, (struct sockaddr *)&self, &sl) != 0 || self.sin_family != AF_INET ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 || peer.sin_family != AF_INET) {
		errno = ENOTCONN; /* VMA's answer for a socket without a header: not a connected UDP one */
		return -1;
	}
	if (ptr == NULL || *len < NETWORK_HEADER_LEN) {
		*len = NETWORK_HEADER_LEN;
		if (ptr == NULL)
			return 0;
		errno = ENOBUFS;
		return -1;
	}
	int tos = 0, ttl = 64, pmtu = IP_PMTUDISC_WANT;
	socklen_t ol = sizeof tos;
	getsockopt(fd, IPPROTO_IP, IP_TOS, &tos, &ol);
	ol = sizeof ttl;
	getsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, &ol);
	ol = sizeof pmtu;
	getsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, &ol);
	uint64_t dmac = 0, smac = 0;
	if (!need_engine())
		return -1;
	long r = goxio_eng.vma_macs(ntohl(self.sin_addr.s_addr), ntohl(peer.sin_addr.s_addr), &dmac, &smac);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	unsigned char h[NETWORK_HEADER_LEN] = {0};
	put_mac(h, dmac);
	put_mac(h + 6, smac);
	put16(h + 12, 0x0800);
	unsigned char *ip = h + 14;
	ip[0] = 0x45;
	ip[1] = (unsigned char)tos;
	/* Linux sets DF on UDP unless path-MTU discovery is off (don't) */
	if (pmtu == IP_PMTUDISC_WANT || pmtu == IP_PMTUDISC_DO || pmtu == IP_PMTUDISC_PROBE)
		put16(ip + 6, 0x4000);
	ip[8] = (unsigned char)ttl;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &self.sin_addr, 4);
	memcpy(ip + 16, &peer.sin_addr, 4);
	unsigned char *udp = ip + 20;
	memcpy(udp, &self.sin_port, 2);
	memcpy(udp + 2, &peer.sin_port, 2);
	memcpy(ptr, h, sizeof h);
	*len = NETWORK_HEADER_LEN;
	return 0;
}

/* ---- members goxio refuses (as VMA's own stubs do: -1, EOPNOTSUPP) ---- */

#define REFUSE                                                                                             \
	do {                                                                                               \
		errno = EOPNOTSUPP;                                                                        \
		return -1;                                                                                 \
	} while (0)

static int no_register_recv_callback(int s, vma_recv_callback_t cb, void *ctx) { REFUSE; }
static int no_recvfrom_zcopy(int s, void *buf, size_t len, int *flags, struct sockaddr *from, socklen_t *fromlen) {
	REFUSE;
}
static int no_free_packets(int s, struct vma_packet_t *pkts, size_t count) { REFUSE; }
static int no_add_conf_rule(const char *line) { REFUSE; }
static int no_thread_offload(int offload, pthread_t tid) { REFUSE; }
static int no_socketxtreme_poll(int fd, struct vma_completion_t *c, unsigned int n, int flags) { REFUSE; }
static int no_get_socket_rings_num(int fd) { REFUSE; }
static int no_get_socket_rings_fds(int fd, int *fds, int n) { REFUSE; }
static int no_get_socket_tx_ring_fd(int fd, struct sockaddr *to, socklen_t len) { REFUSE; }
static int no_socketxtreme_free_vma_packets(struct vma_packet_desc_t *p, int n) { REFUSE; }
static int no_socketxtreme_ref_vma_buff(struct vma_buff_t *b) { REFUSE; }
static int no_socketxtreme_free_vma_buff(struct vma_buff_t *b) { REFUSE; }
static int no_dump_fd_stats(int fd, int level) { REFUSE; }
static int no_vma_add_ring_profile(struct vma_ring_type_attr *p, int *key) { REFUSE; }
static int no_get_socket_network_header(int fd, void *ptr, uint16_t *len) { REFUSE; }
static int no_get_ring_direct_descriptors(int fd, struct vma_mlx_hw_device_data *d) { REFUSE; }
static int no_register_memory_on_ring(int fd, void *addr, size_t len, uint32_t *key) { REFUSE; }
static int no_deregister_memory_on_ring(int fd, void *addr, size_t len) { REFUSE; }
static int no_vma_modify_ring(struct vma_modify_ring_attr *a) { REFUSE; }
static int no_ioctl(void *cmsg, size_t len) { REFUSE; }

/* ---- the API object ---- */

static struct vma_api_t api = {
	.register_recv_callback = no_register_recv_callback,
	.recvfrom_zcopy = no_recvfrom_zcopy,
	.free_packets = no_free_packets,
	.add_conf_rule = no_add_conf_rule,
	.thread_offload = no_thread_offload,
	.socketxtreme_poll = no_socketxtreme_poll,
	.get_socket_rings_num = no_get_socket_rings_num,
	.get_socket_rings_fds = no_get_socket_rings_fds,
	.get_socket_tx_ring_fd = no_get_socket_tx_ring_fd,
	.socketxtreme_free_vma_packets = no_socketxtreme_free_vma_packets,
	.socketxtreme_ref_vma_buff = no_socketxtreme_ref_vma_buff,
	.socketxtreme_free_vma_buff = no_socketxtreme_free_vma_buff,
	.dump_fd_stats = no_dump_fd_stats,
	.vma_add_ring_profile = no_vma_add_ring_profile,
	.get_socket_network_header = no_get_socket_network_header,
	.get_ring_direct_descriptors = no_get_ring_direct_descriptors,
	.register_memory_on_ring = no_register_memory_on_ring,
	.deregister_memory_on_ring = no_deregister_memory_on_ring,
	.vma_modify_ring = no_vma_modify_ring,
	.vma_extra_supported_mask = 0,
	.ioctl = no_ioctl,
};

static pthread_once_t api_once = PTHREAD_ONCE_INIT;

/* switched_off reports whether v is one of the false values of the engine's boolean parameters
 * (conf.parseBool): false, no, off, disable, disabled in any case, or an integer equal to 0. A value
 * the engine refuses (it says so at start) leaves the API on, its default. */
static int switched_off(const char *v) {
	while (*v == ' ' || *v == '\t')
		v++;
	static const char *const off[] = {"false", "no", "off", "disable", "disabled"};
	for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
		size_t n = strlen(off[i]);
		if (strncasecmp(v, off[i], n) == 0 && (v[n] == 0 || v[n] == ' ' || v[n] == '\t'))
			return 1;
	}
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	while (*end == ' ' || *end == '\t')
		end++;
	return end != v && *end == 0 && errno == 0 && n == 0;
}

/* api_init fills in the members goxio provides, unless GOXIO_EXTRA_API switches them off. */
static void api_init(void) {
	int saved = errno;
	const char *v = getenv("GOXIO_EXTRA_API");
	int off = v != NULL && switched_off(v);
	errno = saved;
	if (off)
		return;
	api.register_recv_callback = vma_register_recv_callback;
	api.recvfrom_zcopy = vma_recvfrom_zcopy;
	api.thread_offload = vma_thread_offload;
	api.add_conf_rule = vma_add_conf_rule;
	api.dump_fd_stats = vma_dump_fd_stats;
	api.get_socket_network_header = vma_get_socket_network_header;
	api.free_packets = vma_free_packets;
	api.get_socket_rings_num = vma_get_socket_rings_num;
	api.get_socket_rings_fds = vma_get_socket_rings_fds;
	api.vma_extra_supported_mask = VMA_EXTRA_API_REGISTER_RECV_CALLBACK | VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_THREAD_OFFLOAD |
				       VMA_EXTRA_API_ADD_CONF_RULE | VMA_EXTRA_API_DUMP_FD_STATS |
				       VMA_EXTRA_API_GET_SOCKET_NETWORK_HEADER | VMA_EXTRA_API_FREE_PACKETS |
				       VMA_EXTRA_API_GET_SOCKET_RINGS_NUM | VMA_EXTRA_API_GET_SOCKET_RINGS_FDS;
}

/* goxio_vma_get_api answers getsockopt(any fd, SOL_SOCKET, SO_VMA_GET_API): the API object's
 * address in *val. */
GOXIO_HIDDEN int goxio_vma_get_api(void *val, socklen_t *len) {
	if (val == NULL || len == NULL) {
		errno = EFAULT;
		return -1;
	}
	if (*len < sizeof(struct vma_api_t *)) {
		errno = EINVAL;
		return -1;
	}
	pthread_once(&api_once, api_init);
	struct vma_api_t *p = &api;
	memcpy(val, &p, sizeof p);
	*len = sizeof p;
	return 0;
}

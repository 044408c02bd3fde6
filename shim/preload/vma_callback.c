/*
 * vma_callback.c: VMA's register_recv_callback. The receive trampolines (calls_io.c) hand a
 * receive on a socket with a callback to goxio_vma_cb_recv, which runs the callback on each
 * datagram before the program sees it.
 */
#include "vma.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>

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
GOXIO_COLD static struct callback cbs[MAX_CALLBACKS];
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

int vma_register_recv_callback(int s, vma_recv_callback_t cb, void *ctx) {
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
	if (in_callback || goxio_in_vfork() || (flags & (MSG_PEEK | MSG_ERRQUEUE | MSG_OOB)) || !callback_of(fd, &c))
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
			rec_release(i);
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
			rec_release(i);
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
		rec_release(i);
		break;
	}
	in_callback = 0;
	return 1;
}

/*
 * callback.c: register_recv_callback as a program written against goxio_extra.h uses it.
 *
 * Each datagram's first byte names the verdict the callback gives it: 'D' drop, 'H' hold, 'R'
 * receive. With the callback (argv[1] "full") the ordinary receive calls (read, recv, recvfrom,
 * recvmsg, in turn) see only the 'R' datagrams and the held ones stay in their records until
 * free_packets; without it ("none": no library, "cleared": GOXIO_EXTRA_API=0) the program applies
 * the same verdicts itself after receiving. stdout is the same either way.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../shim/goxio_extra.h"

#include "check.h"

static const char verdicts[] = "RDHRHDRRHD";
#define N (sizeof verdicts - 1)

static struct vma_api_t *api;
static struct sockaddr_in rxa, txa;
static int rxfd;

struct held {
	void *id;       /* with the callback: the record's packet id */
	const char *p;  /* the datagram: in the record, or the program's own copy */
	size_t len;
	char copy[2048];
};
static struct held held[N];
static int nheld, calls;

static size_t make(int k, char *buf) {
	size_t n = 100 + (size_t)k * 151;
	buf[0] = verdicts[k];
	for (size_t i = 1; i < n; i++)
		buf[i] = (char)('a' + (i + (size_t)k) % 26);
	return n;
}

static vma_recv_callback_retval_t cb(int fd, size_t sz_iov, struct iovec iov[], struct vma_info_t *info, void *ctx) {
	calls++;
	CHECK(ctx == &held && fd == rxfd, "callback context");
	CHECK(sz_iov == 1 && iov[0].iov_len == info->payload_sz && info->struct_sz == sizeof *info, "callback iovec");
	CHECK(info->src->sin_port == txa.sin_port && info->dst->sin_port == rxa.sin_port, "callback addresses");
	const char *d = iov[0].iov_base;
	if (d[0] == 'D')
		return VMA_PACKET_DROP;
	if (d[0] == 'H') {
		held[nheld].id = info->packet_id;
		held[nheld].p = d;
		held[nheld].len = iov[0].iov_len;
		nheld++;
		return VMA_PACKET_HOLD;
	}
	return VMA_PACKET_RECV;
}

/* receive one datagram the program sees, with the k-th receive call of the rotation. */
static ssize_t receive(int fd, char *buf, size_t len, int k, int flags) {
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	struct iovec v = {buf, len};
	struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &v, .msg_iovlen = 1};
	switch (k % 4) {
	case 0:
		return flags ? recv(fd, buf, len, flags) : read(fd, buf, len);
	case 1:
		return recv(fd, buf, len, flags);
	case 2: {
		ssize_t r = recvfrom(fd, buf, len, flags, (struct sockaddr *)&from, &fl);
		CHECK(r < 0 || (fl == sizeof from && from.sin_port == txa.sin_port), "recvfrom's source");
		return r;
	}
	default: {
		ssize_t r = recvmsg(fd, &m, flags);
		CHECK(r < 0 || (m.msg_namelen == sizeof from && from.sin_port == txa.sin_port && m.msg_flags == 0),
		      "recvmsg's source and flags");
		return r;
	}
	}
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "none";
	setvbuf(stdout, NULL, _IOLBF, 0);
	api = goxio_get_api();
	int use = api != NULL && (api->vma_extra_supported_mask & (VMA_EXTRA_API_REGISTER_RECV_CALLBACK | VMA_EXTRA_API_FREE_PACKETS)) ==
					 (VMA_EXTRA_API_REGISTER_RECV_CALLBACK | VMA_EXTRA_API_FREE_PACKETS);
	CHECK(use == (strcmp(mode, "full") == 0), "callbacks offered: %d in mode %s", use, mode);

	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
	rxfd = rx;
	rxa = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof rxa;
	CHECK(bind(rx, (struct sockaddr *)&rxa, sizeof rxa) == 0 && getsockname(rx, (struct sockaddr *)&rxa, &al) == 0, "bind");
	CHECK(connect(tx, (struct sockaddr *)&rxa, sizeof rxa) == 0, "connect");
	al = sizeof txa;
	CHECK(getsockname(tx, (struct sockaddr *)&txa, &al) == 0, "getsockname");
	if (use) {
		int p[2], t = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(pipe(p) == 0, "pipe");
		errno = 0;
		CHECK(api->register_recv_callback(p[0], cb, &held) == -1 && errno == EINVAL, "a callback on a pipe");
		errno = 0;
		CHECK(api->register_recv_callback(t, cb, &held) == -1 && errno == EINVAL, "a callback on a TCP socket");
		close(p[0]);
		close(p[1]);
		close(t);
		CHECK(api->register_recv_callback(rx, cb, &held) == 0, "register_recv_callback");
	}
	char buf[2048];
	for (size_t k = 0; k < N; k++) {
		size_t n = make((int)k, buf);
		CHECK(send(tx, buf, n, 0) == (ssize_t)n, "send %zu", k);
	}
	int seen = 0;
	for (size_t k = 0; k < N; k++) {
		if (verdicts[k] != 'R')
			continue;
		/* the next datagram the program sees */
		for (;;) {
			ssize_t r = receive(rx, buf, sizeof buf, seen, 0);
			CHECK(r > 0, "receive");
			if (!use && buf[0] == 'D')
				continue;
			if (!use && buf[0] == 'H') {
				held[nheld].len = (size_t)r;
				memcpy(held[nheld].copy, buf, (size_t)r);
				held[nheld].p = held[nheld].copy;
				nheld++;
				continue;
			}
			char want[2048];
			size_t wn = make((int)k, want);
			CHECK((size_t)r == wn && memcmp(buf, want, wn) == 0, "datagram %zu", k);
			printf("received datagram %zu: %zd bytes\n", k, r);
			seen++;
			break;
		}
	}
	/* a dropped datagram is never seen: the non-blocking receive after it finds nothing */
	CHECK(send(tx, "Dlast", 5, 0) == 5, "send");
	usleep(100 * 1000);
	for (;;) {
		ssize_t r = receive(rx, buf, sizeof buf, 1, MSG_DONTWAIT);
		if (!use && r > 0 && buf[0] == 'D')
			continue;
		if (!use && r > 0 && buf[0] == 'H') {
			held[nheld].len = (size_t)r;
			memcpy(held[nheld].copy, buf, (size_t)r);
			held[nheld].p = held[nheld].copy;
			nheld++;
			continue;
		}
		CHECK(r == -1 && errno == EAGAIN, "after a dropped datagram: %zd", r);
		printf("after the dropped datagram: EAGAIN\n");
		break;
	}
	int hk = 0;
	for (size_t k = 0; k < N; k++) {
		if (verdicts[k] != 'H')
			continue;
		char want[2048];
		size_t wn = make((int)k, want);
		CHECK(hk < nheld && held[hk].len == wn && memcmp(held[hk].p, want, wn) == 0, "held datagram %zu", k);
		printf("held datagram %zu: %zu bytes intact\n", k, wn);
		if (use) {
			struct vma_packet_t pk = {.packet_id = held[hk].id};
			CHECK(api->free_packets(rx, &pk, 1) == 0, "free_packets");
			errno = 0;
			CHECK(api->free_packets(rx, &pk, 1) == -1 && errno == ENOENT, "a held packet freed twice");
		}
		hk++;
	}
	CHECK(hk == nheld, "%d held, want %d", nheld, hk);
	if (use) {
		CHECK(calls == (int)N + 1, "%d callbacks for %zu datagrams", calls, N + 1);
		/* unregistered: datagrams go straight to the program */
		CHECK(api->register_recv_callback(rx, NULL, NULL) == 0, "unregister");
		CHECK(send(tx, "Dafter", 6, 0) == 6, "send");
		CHECK(recv(rx, buf, sizeof buf, 0) == 6 && calls == (int)N + 1, "a datagram after unregistering");
	} else {
		CHECK(send(tx, "Dafter", 6, 0) == 6 && recv(rx, buf, sizeof buf, 0) == 6, "a datagram after");
	}
	printf("done\n");
	return 0;
}

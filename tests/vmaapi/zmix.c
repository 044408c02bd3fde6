/*
 * zmix.c: recvfrom_zcopy mixed with the socket's other receive calls, as a program may mix them.
 *
 *	zmix none|full|cleared
 *
 * Under the library a zero-copy receive on a shared-memory socket takes the datagrams that wait
 * behind the one it returns into the library's box (vma_records.c), where the next zero-copy
 * receives find them. The socket must not look any different for it: it stays readable for poll,
 * epoll and FIONREAD while datagrams wait there, recv and a peek take them in order, a dup of the
 * fd carries on after the original is closed, held and freed packets interleave with all of it,
 * and a free of every packet lets the sender fill the socket again. The program receives NDGRAM
 * datagrams of distinct sizes and contents that way (plain recvfrom where the API is absent or
 * cleared) and prints what it got; stdout is the same in every run. argv[1] says which API the
 * run has (as zcopy.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../shim/goxio_extra.h"

#include "check.h"

#define NDGRAM 24

static struct vma_api_t *api;
static int zc;

static unsigned char pattern(size_t i, int seed) { return (unsigned char)(i * 131 + (size_t)seed * 7 + (i >> 8)); }

static size_t dgram_len(int k) { return (size_t)(k * 397) % 1400 + 8; }

/* held packets, freed in a mixed order along the way */
static void *held[NDGRAM];
static int nheld;

static void free_held(int s, int every) {
	if (!zc)
		return;
	struct vma_packet_t pk[NDGRAM];
	int n = 0, keep = 0;
	for (int i = 0; i < nheld; i++) {
		if (every || i % 2 == 1)
			pk[n++] = (struct vma_packet_t){.packet_id = held[i]};
		else
			held[keep++] = held[i];
	}
	if (n > 0)
		CHECK(api->free_packets(s, pk, (size_t)n) == 0, "free_packets %d", n);
	nheld = keep;
}

static void check(int k, const unsigned char *d, ssize_t n, const char *how) {
	CHECK(n == (ssize_t)dgram_len(k), "%s: datagram %d: %zd bytes, want %zu", how, k, n, dgram_len(k));
	for (ssize_t i = 0; i < n; i++)
		CHECK(d[i] == pattern((size_t)i, k), "%s: datagram %d byte %zd", how, k, i);
	printf("datagram %d: %zd bytes by %s\n", k, n, how);
}

/* zrecv: the next datagram with recvfrom_zcopy (held) or, without the API, recvfrom. */
static void zrecv(int s, int k, int flags) {
	static unsigned char copy[2048];
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	if (!zc) {
		check(k, copy, recvfrom(s, copy, sizeof copy, flags, (struct sockaddr *)&from, &fl), "zero-copy receive");
	} else {
		unsigned char pbuf[256];
		int f = flags;
		ssize_t n = api->recvfrom_zcopy(s, pbuf, sizeof pbuf, &f, (struct sockaddr *)&from, &fl);
		CHECK(n < 0 || (f & MSG_VMA_ZCOPY), "not zero-copy");
		struct vma_packets_t *p = (struct vma_packets_t *)pbuf;
		if (n >= 0)
			held[nheld++] = p->pkts[0].packet_id;
		check(k, n >= 0 ? p->pkts[0].iov[0].iov_base : NULL, n, "zero-copy receive");
	}
	CHECK(fl == sizeof from && from.sin_family == AF_INET && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	      "source address of %d: length %u family %d", k, (unsigned)fl, from.sin_family);
}

static void readable(int s, int epfd, int k) {
	struct pollfd p = {.fd = s, .events = POLLIN};
	CHECK(poll(&p, 1, 0) == 1 && (p.revents & POLLIN), "poll: not readable before datagram %d", k);
	struct epoll_event ev;
	CHECK(epoll_wait(epfd, &ev, 1, 0) == 1 && (ev.events & EPOLLIN), "epoll: not readable before datagram %d", k);
	int avail = -1;
	CHECK(ioctl(s, FIONREAD, &avail) == 0 && avail == (int)dgram_len(k), "FIONREAD %d before datagram %d (%zu)", avail, k,
	      dgram_len(k));
	printf("readable before datagram %d\n", k);
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "none";
	setvbuf(stdout, NULL, _IOLBF, 0);
	api = goxio_get_api();
	zc = api != NULL && (api->vma_extra_supported_mask & (VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS)) ==
				    (VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS);
	CHECK(zc == (strcmp(mode, "full") == 0), "zero-copy offered: %d in mode %s", zc, mode);
	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	CHECK(bind(rx, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(rx, (struct sockaddr *)&a, &al) == 0, "bind");
	/* a first receive: under the library the engine serves the socket from now on */
	char b;
	CHECK(recv(rx, &b, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN, "a datagram from nowhere");
	static unsigned char out[2048];
	for (int k = 0; k < NDGRAM; k++) {
		size_t n = dgram_len(k);
		for (size_t i = 0; i < n; i++)
			out[i] = pattern(i, k);
		CHECK(sendto(tx, out, n, 0, (struct sockaddr *)&a, sizeof a) == (ssize_t)n, "sendto %d", k);
	}
	int epfd = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = rx};
	CHECK(epfd >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, rx, &ev) == 0, "epoll");

	int k = 0;
	zrecv(rx, k++, 0); /* the others wait behind it: in the box under the library */
	readable(rx, epfd, k);
	static unsigned char copy[2048];
	check(k, copy, recv(rx, copy, sizeof copy, 0), "recv");
	k++;
	zrecv(rx, k++, 0);
	check(k, copy, recv(rx, copy, sizeof copy, MSG_PEEK), "peek");
	zrecv(rx, k++, 0);
	check(k, copy, recv(rx, copy, sizeof copy, MSG_PEEK | MSG_DONTWAIT), "peek");
	check(k, copy, recv(rx, copy, sizeof copy, MSG_DONTWAIT), "recv");
	k++;
	free_held(rx, 0);
	zrecv(rx, k++, MSG_DONTWAIT);
	readable(rx, epfd, k);
	/* a dup carries on after the original fd is gone (packets are freed through the fd that
	 * received them) */
	int d = dup(rx);
	CHECK(d >= 0, "dup");
	zrecv(rx, k++, 0);
	free_held(rx, 1);
	close(rx);
	zrecv(d, k++, 0);
	check(k, copy, read(d, copy, sizeof copy), "read");
	k++;
	free_held(d, 1);
	while (k < NDGRAM) {
		zrecv(d, k++, 0);
		if (k % 3 == 0)
			free_held(d, k % 2);
	}
	free_held(d, 1);
	errno = 0;
	CHECK(recv(d, copy, sizeof copy, MSG_DONTWAIT) == -1 && errno == EAGAIN, "a datagram from nowhere");
	struct pollfd p = {.fd = d, .events = POLLIN};
	CHECK(poll(&p, 1, 0) == 0, "readable with nothing to read");
	/* every packet freed: the socket takes a burst as large as the first again */
	for (int j = 0; j < NDGRAM; j++) {
		size_t n = dgram_len(j);
		for (size_t i = 0; i < n; i++)
			out[i] = pattern(i, j);
		CHECK(sendto(tx, out, n, 0, (struct sockaddr *)&a, sizeof a) == (ssize_t)n, "sendto %d", j);
	}
	for (int j = 0; j < NDGRAM; j++) {
		zrecv(d, j, MSG_DONTWAIT);
		free_held(d, 1);
	}
	printf("done\n");
	close(d);
	close(tx);
	close(epfd);
	return 0;
}

/*
 * zxdp.c: recvfrom_zcopy on the AF_XDP transport is zero-copy.
 *
 *   zxdp recv PORT MODE   the receiver (under the library with GOXIO_XDP, or without it)
 *   zxdp send ADDR PORT   the sender (a plain program in the other network namespace)
 *
 * MODE says what the receiver must find:
 *   none     no library: no API, datagrams copied by recvfrom
 *   xdp      the AF_XDP transport: recvfrom_zcopy's iovec points into the UMEM, the mapping named
 *            "/memfd:goxio-umem", and aliases it (a byte written through the mapping's file shows
 *            through the iovec: no copy); held frames fill the socket's queue (128 datagrams), the
 *            datagrams after them are dropped as by a full receive buffer, and delivery resumes,
 *            exact and in order, after free_packets; double and foreign frees are refused
 *   cleared  GOXIO_EXTRA_API=0: no member, the program's fallback (recvfrom) path
 *
 * The exchange, the sender led by the receiver's acknowledgements (datagrams back to it):
 *   1. 8 datagrams of different lengths, all held at once, checked, then freed one by one;
 *   2. a burst of BURST 64-byte datagrams, each held as it comes, none freed until the burst is
 *      over ("HELD n" on stdout, then a line on stdin: the test reads the statistics then);
 *   3. 8 more datagrams: exactly these, in order (none of the burst's comes late).
 * stdout's result lines are the same in every mode; any broken expectation exits 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../shim/goxio_extra.h"

#include "check.h"
#include "zpkt.h"

#define NFEW 8
#define BURST 400
#define QUEUE 128 /* the AF_XDP transport's queue per socket */
#define BURST_SEQ 100
#define LAST_SEQ 1000

static size_t dgram_len(int k) { return (size_t)(k * 1777) % 1400 + 5; }

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the sender ---- */

/* ack waits up to 20 s for the receiver's acknowledgement c. */
static void ack(int s, char c) {
	char b;
	ssize_t n = recv(s, &b, 1, 0);
	CHECK(n == 1 && b == c, "acknowledgement %c", c);
}

static void send_seq(int s, const struct sockaddr_in *to, uint32_t seq, size_t len) {
	static unsigned char out[1500];
	fill(out, len, seq);
	CHECK(sendto(s, out, len, 0, (const struct sockaddr *)to, sizeof *to) == (ssize_t)len, "sendto");
}

static int sender(const char *addr, int port) {
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	CHECK(inet_pton(AF_INET, addr, &to.sin_addr) == 1, "address %s", addr);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct timeval tv = {.tv_sec = 20};
	CHECK(s >= 0 && setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0, "socket");
	for (int k = 0; k < NFEW; k++) {
		send_seq(s, &to, (uint32_t)k, dgram_len(k));
		usleep(2000);
	}
	ack(s, 'B');
	for (uint32_t k = 0; k < BURST; k++)
		send_seq(s, &to, BURST_SEQ + k, 64);
	ack(s, 'C');
	for (int k = 0; k < NFEW; k++) {
		send_seq(s, &to, LAST_SEQ + (uint32_t)k, dgram_len(k));
		usleep(2000);
	}
	return 0;
}

/* ---- where a held datagram lies ---- */

/* in_umem checks that the n bytes at p lie in the UMEM and are its bytes, not a copy: a byte
 * written through the mapping's file (/proc/self/map_files) shows at p, and is put back. */
static void in_umem(const unsigned char *p, size_t n) {
	char name[1024], file[128];
	unsigned long lo, hi;
	off_t off;
	CHECK(mapping(p, name, sizeof name, &lo, &hi, &off), "%p is in no mapping", (const void *)p);
	CHECK(strstr(name, "/memfd:goxio-umem") == name, "%p is not in the UMEM but in \"%s\"", (const void *)p, name);
	CHECK((uintptr_t)p + n <= hi, "the datagram runs past its mapping");
	snprintf(file, sizeof file, "/proc/self/map_files/%lx-%lx", lo, hi);
	aliases(p, n, file, off);
}

/* ---- the receiver ---- */

/* free_all frees n records with one free_packets call. */
static void free_all(int s, struct rec *r, int n) {
	if (!zc || n == 0)
		return;
	struct vma_packet_t *pk = calloc((size_t)n, sizeof *pk);
	CHECK(pk != NULL, "calloc");
	for (int k = 0; k < n; k++)
		pk[k].packet_id = r[k].id;
	CHECK(api->free_packets(s, pk, (size_t)n) == 0, "free %d packets", n);
	free(pk);
}

static void tell(int s, const struct sockaddr_in *peer, char c) {
	CHECK(sendto(s, &c, 1, 0, (const struct sockaddr *)peer, sizeof *peer) == 1, "acknowledge %c", c);
}

static int receiver(int port, const char *mode) {
	int xdp = strcmp(mode, "xdp") == 0;
	api = vma_get_api();
	zc = api != NULL && (api->vma_extra_supported_mask & (VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS)) ==
				  (VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS);
	CHECK(zc == xdp, "mode %s, zero-copy offered: %d", mode, zc);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	struct timeval tv = {.tv_sec = 20}; /* a lost datagram fails the run instead of hanging it */
	CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0,
	      "bind port %d", port);
	/* a first receive: under the library it loads the engine, which steers the socket's flow */
	char b;
	CHECK(recv(s, &b, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN, "a datagram from nowhere");
	printf("READY\n");
	fflush(stdout);

	/* 1: NFEW datagrams held at once, where they lie */
	static struct rec r[BURST];
	struct sockaddr_in peer, from;
	for (int k = 0; k < NFEW; k++) {
		CHECK(receive(s, &r[k], 0, &from) == (ssize_t)dgram_len(k), "datagram %d length", k);
		CHECK(k == 0 || (from.sin_addr.s_addr == peer.sin_addr.s_addr && from.sin_port == peer.sin_port), "source");
		peer = from;
		CHECK(intact(r[k].data, r[k].len, (uint32_t)k), "datagram %d bytes", k);
		if (xdp)
			in_umem(r[k].data, r[k].len);
	}
	for (int k = 0; k < NFEW; k++)
		CHECK(intact(r[k].data, r[k].len, (uint32_t)k), "datagram %d bytes after the others came", k);
	if (zc) {
		int other = socket(AF_INET, SOCK_DGRAM, 0);
		CHECK(free_one(other, r[0].id) == -1 && errno == ENOENT, "a packet freed through another socket");
		CHECK(free_one(s, r[0].id) == 0, "free_packets");
		CHECK(free_one(s, r[0].id) == -1 && errno == ENOENT, "a double free");
		int local;
		CHECK(free_one(s, &local) == -1 && errno == ENOENT, "a foreign pointer");
		for (int k = 1; k < NFEW; k++)
			CHECK(free_one(s, r[k].id) == 0, "free datagram %d", k);
		close(other);
	}
	printf("1: %d datagrams exact, held together\n", NFEW);

	/* 2: the burst, held as it comes until nothing came for 300 ms */
	tell(s, &peer, 'B');
	int held = 0;
	uint32_t last = 0;
	double quiet = now() + 3, end = now() + 20;
	while (held < BURST && now() < quiet && now() < end) {
		ssize_t n = receive(s, &r[held], MSG_DONTWAIT, &from);
		if (n < 0) {
			CHECK(errno == EAGAIN, "burst receive");
			usleep(1000);
			continue;
		}
		uint32_t seq;
		memcpy(&seq, r[held].data, sizeof seq);
		CHECK(n == 64 && seq >= BURST_SEQ && seq < BURST_SEQ + BURST && (held == 0 || seq > last) && intact(r[held].data, 64, seq),
		      "burst datagram %d (seq %u after %u)", held, seq, last);
		if (xdp)
			in_umem(r[held].data, r[held].len);
		last = seq;
		held++;
		quiet = now() + 0.3;
	}
	CHECK(held > 0, "no datagram of the burst");
	if (xdp)
		CHECK(held <= QUEUE, "%d datagrams held, more than the queue's %d", held, QUEUE);
	fprintf(stderr, "held %d of the burst's %d\n", held, BURST);
	printf("HELD %d\n", held);
	fflush(stdout);
	char line[64];
	CHECK(fgets(line, sizeof line, stdin) != NULL, "a line on stdin");
	for (int k = 0; k < held; k++) {
		uint32_t seq;
		memcpy(&seq, r[k].data, sizeof seq);
		CHECK(intact(r[k].data, 64, seq), "burst datagram %d changed while held", k);
	}
	free_all(s, r, held);
	printf("2: the burst in order, intact while held\n");

	/* 3: exactly the last datagrams, in order */
	tell(s, &peer, 'C');
	for (int k = 0; k < NFEW; k++) {
		CHECK(receive(s, &r[k], 0, &from) == (ssize_t)dgram_len(k), "last datagram %d length", k);
		CHECK(intact(r[k].data, r[k].len, LAST_SEQ + (uint32_t)k), "last datagram %d bytes", k);
		if (zc)
			CHECK(free_one(s, r[k].id) == 0, "free last datagram %d", k);
	}
	printf("3: %d datagrams exact, in order\n", NFEW);
	close(s);
	return 0;
}

int main(int argc, char **argv) {
	if (argc == 4 && strcmp(argv[1], "send") == 0)
		return sender(argv[2], atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "recv") == 0)
		return receiver(atoi(argv[2]), argv[3]);
	fprintf(stderr, "usage: zxdp recv PORT none|xdp|cleared | zxdp send ADDR PORT\n");
	return 2;
}

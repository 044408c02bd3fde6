/*
 * zcopy.c: a program written against goxio_extra.h, as VMA's extra-API users are.
 *
 * It asks for the API, then moves UDP datagrams and a TCP stream with recvfrom_zcopy and
 * free_packets when the mask offers them, and with plain recvfrom otherwise. stdout is the same
 * whichever path it takes (the data, checked byte by byte); what it expects of the API comes from
 * argv[1]: "none" (no library: no API), "full" (the members goxio provides), "cleared"
 * (GOXIO_EXTRA_API=0: every bit clear, every member refusing). Any broken expectation exits 1.
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

#define NDGRAM 8
#define STREAM_BYTES (300 * 1000)

static const char *mode;
static struct vma_api_t *api;

#include "check.h"

static int have(uint64_t bits) { return api != NULL && (api->vma_extra_supported_mask & bits) == bits; }

static unsigned char pattern(size_t i, int seed) { return (unsigned char)(i * 131 + (size_t)seed * 7 + (i >> 8)); }

static size_t dgram_len(int k) { return k == 0 ? 1 : (size_t)(k * 977) % 9000 + 1; }

/* check_api: the object, its layout, and the mask the mode expects. */
static void check_api(void) {
	api = goxio_get_api();
	if (strcmp(mode, "none") == 0) {
		CHECK(api == NULL, "an API without the library");
		return;
	}
	CHECK(api != NULL, "no API under the library");
	struct vma_api_t *again = NULL;
	int sfd = socket(AF_INET, SOCK_DGRAM, 0);
	socklen_t len = sizeof again;
	CHECK(getsockopt(sfd, SOL_SOCKET, SO_VMA_GET_API, &again, &len) == 0 && again == api && len == sizeof api,
	      "SO_VMA_GET_API on a socket gives another object");
	len = 4;
	errno = 0;
	CHECK(getsockopt(-1, SOL_SOCKET, SO_VMA_GET_API, &again, &len) == -1 && errno == EINVAL,
	      "a short option length is accepted");
	errno = 0;
	int v = 1;
	CHECK(setsockopt(sfd, SOL_SOCKET, SO_VMA_USER_DATA, &v, sizeof v) == -1 && errno == ENOPROTOOPT,
	      "SO_VMA_USER_DATA is not refused");
	close(sfd);
	/* every slot is a function */
	CHECK(sizeof *api == 21 * 8, "struct vma_api_t is %zu bytes", sizeof *api);
	for (int i = 0; i < 21; i++) {
		void *slot;
		memcpy(&slot, (char *)api + 8 * i, sizeof slot);
		CHECK(i == 19 || slot != NULL, "slot %d is NULL", i); /* 19: the mask */
	}
	uint64_t want = VMA_EXTRA_API_REGISTER_RECV_CALLBACK | VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS |
			VMA_EXTRA_API_THREAD_OFFLOAD | VMA_EXTRA_API_ADD_CONF_RULE | VMA_EXTRA_API_DUMP_FD_STATS |
			VMA_EXTRA_API_GET_SOCKET_NETWORK_HEADER |
			VMA_EXTRA_API_GET_SOCKET_RINGS_NUM |
			VMA_EXTRA_API_GET_SOCKET_RINGS_FDS | VMA_EXTRA_API_GET_SOCKET_TX_RING_FD;
	if (strcmp(mode, "cleared") == 0)
		want = 0;
	CHECK(api->vma_extra_supported_mask == want, "mask %#llx, want %#llx",
	      (unsigned long long)api->vma_extra_supported_mask, (unsigned long long)want);
	/* a member without its bit refuses, as VMA's stubs do */
	errno = 0;
	CHECK(api->socketxtreme_poll(0, NULL, 0, 0) == -1 && errno == EOPNOTSUPP, "socketxtreme_poll");
	errno = 0;
	CHECK(api->vma_modify_ring(NULL) == -1 && errno == EOPNOTSUPP, "vma_modify_ring");
	errno = 0;
	CHECK(api->ioctl(NULL, 0) == -1 && errno == EOPNOTSUPP, "ioctl");
	if (want == 0) {
		int flags = 0;
		char buf[64];
		errno = 0;
		CHECK(api->recvfrom_zcopy(0, buf, sizeof buf, &flags, NULL, NULL) == -1 && errno == EOPNOTSUPP,
		      "recvfrom_zcopy with its bit clear");
		errno = 0;
		CHECK(api->get_socket_rings_num(0) == -1 && errno == EOPNOTSUPP, "get_socket_rings_num with its bit clear");
	}
}

/* udp: NDGRAM datagrams, all received (and held) before any is freed, after the sender closed. */
static void udp(void) {
	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	CHECK(bind(rx, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(rx, (struct sockaddr *)&a, &al) == 0, "bind");
	static unsigned char out[9001];
	for (int k = 0; k < NDGRAM; k++) {
		size_t n = dgram_len(k);
		for (size_t i = 0; i < n; i++)
			out[i] = pattern(i, k);
		CHECK(sendto(tx, out, n, 0, (struct sockaddr *)&a, sizeof a) == (ssize_t)n, "sendto %d", k);
	}
	struct sockaddr_in txa;
	socklen_t txl = sizeof txa;
	CHECK(getsockname(tx, (struct sockaddr *)&txa, &txl) == 0, "getsockname tx");
	close(tx); /* the held datagrams outlive their sender */

	if (have(VMA_EXTRA_API_GET_SOCKET_RINGS_NUM | VMA_EXTRA_API_GET_SOCKET_RINGS_FDS | VMA_EXTRA_API_GET_SOCKET_TX_RING_FD)) {
		int rings = api->get_socket_rings_num(rx), fds[4] = {-1, -1, -1, -1};
		CHECK(rings >= 0 && rings <= 1, "get_socket_rings_num %d", rings);
		CHECK(api->get_socket_rings_fds(rx, fds, 4) == rings && (rings == 0 || fds[0] == rx), "get_socket_rings_fds");
		errno = 0;
		int txr = api->get_socket_tx_ring_fd(rx, (struct sockaddr *)&a, sizeof a);
		CHECK(rings == 1 ? txr == rx : (txr == -1 && errno == ENODATA), "get_socket_tx_ring_fd %d with %d rings", txr, rings);
		int p[2];
		CHECK(pipe(p) == 0, "pipe");
		errno = 0;
		CHECK(api->get_socket_rings_num(p[0]) == -1 && errno == EINVAL, "rings of a pipe");
		errno = 0;
		CHECK(api->get_socket_rings_fds(p[0], fds, 4) == -1 && errno == EINVAL, "ring fds of a pipe");
		errno = 0;
		CHECK(api->get_socket_tx_ring_fd(p[0], NULL, 0) == -1 && errno == EINVAL, "TX ring of a pipe");
		close(p[0]);
		close(p[1]);
	}

	int zc = have(VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS);
	struct {
		void *id;
		struct iovec iov;
	} held[NDGRAM];
	static unsigned char copies[NDGRAM][9001];
	for (int k = 0; k < NDGRAM; k++) {
		size_t n = dgram_len(k);
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		const unsigned char *data;
		ssize_t got;
		if (zc) {
			unsigned char pbuf[256];
			int flags = 0;
			got = api->recvfrom_zcopy(rx, pbuf, sizeof pbuf, &flags, (struct sockaddr *)&from, &fl);
			CHECK(got == (ssize_t)n, "recvfrom_zcopy %d: %zd, want %zu", k, got, n);
			CHECK(flags & MSG_VMA_ZCOPY, "no MSG_VMA_ZCOPY");
			struct vma_packets_t *pk = (struct vma_packets_t *)pbuf;
			CHECK(pk->n_packet_num == 1 && pk->pkts[0].sz_iov == 1 && pk->pkts[0].iov[0].iov_len == n,
			      "packets description");
			held[k].id = pk->pkts[0].packet_id;
			held[k].iov = pk->pkts[0].iov[0];
			CHECK(held[k].iov.iov_base != (void *)pbuf, "the iovec points into the caller's buffer");
			data = held[k].iov.iov_base;
		} else {
			got = recvfrom(rx, copies[k], sizeof copies[k], 0, (struct sockaddr *)&from, &fl);
			CHECK(got == (ssize_t)n, "recvfrom %d: %zd, want %zu", k, got, n);
			data = copies[k];
		}
		CHECK(fl == sizeof from && from.sin_port == txa.sin_port, "source address");
		(void)data;
	}
	/* every datagram is checked only now: the held ones stayed intact while others arrived */
	for (int k = 0; k < NDGRAM; k++) {
		const unsigned char *data = zc ? held[k].iov.iov_base : copies[k];
		size_t n = dgram_len(k);
		for (size_t i = 0; i < n; i++)
			CHECK(data[i] == pattern(i, k), "datagram %d byte %zu", k, i);
		printf("udp datagram %d: %zu bytes ok\n", k, n);
	}
	if (zc) {
		for (int k = 0; k < NDGRAM; k++)
			for (int j = 0; j < k; j++)
				CHECK(held[k].id != held[j].id && held[k].iov.iov_base != held[j].iov.iov_base,
				      "two held packets share a record");
		struct vma_packet_t pk = {.packet_id = held[0].id, .sz_iov = 0};
		errno = 0;
		CHECK(api->free_packets(rx + 1000, &pk, 1) == -1 && errno == ENOENT, "freeing from another socket");
		CHECK(api->free_packets(rx, &pk, 1) == 0, "free_packets");
		errno = 0;
		CHECK(api->free_packets(rx, &pk, 1) == -1 && errno == ENOENT, "a double free");
		int local;
		pk.packet_id = &local;
		errno = 0;
		CHECK(api->free_packets(rx, &pk, 1) == -1 && errno == ENOENT, "a foreign pointer");
		pk.packet_id = held[1].id;
		struct vma_packet_t two[2] = {pk, pk};
		errno = 0;
		CHECK(api->free_packets(rx, two, 2) == -1 && errno == ENOENT, "the same packet twice in one call");
		for (int k = 1; k < NDGRAM; k++) {
			pk.packet_id = held[k].id;
			CHECK(api->free_packets(rx, &pk, 1) == 0, "free_packets %d", k);
		}
		/* a small buffer: the data is copied, as VMA does */
		CHECK(sendto(rx, "tiny", 4, 0, (struct sockaddr *)&a, sizeof a) == 4, "sendto self");
		char small[8];
		int flags = 0;
		CHECK(api->recvfrom_zcopy(rx, small, sizeof small, &flags, NULL, NULL) == 4 && !(flags & MSG_VMA_ZCOPY) &&
			      memcmp(small, "tiny", 4) == 0,
		      "copying fallback for a small buffer");
	}
	close(rx);
}

/* tcp: a stream in order, through held records when offered. */
static void tcp(void) {
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0 &&
		      getsockname(l, (struct sockaddr *)&a, &al) == 0,
	      "listen");
	CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0, "connect");
	int s = accept(l, NULL, NULL);
	CHECK(s >= 0, "accept");
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		static unsigned char out[STREAM_BYTES];
		for (size_t i = 0; i < STREAM_BYTES; i++)
			out[i] = pattern(i, 99);
		for (size_t off = 0; off < STREAM_BYTES;) {
			ssize_t w = write(c, out + off, STREAM_BYTES - off);
			if (w <= 0)
				_exit(2);
			off += (size_t)w;
		}
		_exit(0);
	}
	close(c);
	int zc = have(VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS);
	size_t total = 0;
	for (;;) {
		static unsigned char buf[65536];
		const unsigned char *data = buf;
		ssize_t got;
		void *id = NULL;
		if (zc) {
			int flags = 0;
			got = api->recvfrom_zcopy(s, buf, sizeof buf, &flags, NULL, NULL);
			if (got > 0) {
				CHECK(flags & MSG_VMA_ZCOPY, "no MSG_VMA_ZCOPY on TCP");
				struct vma_packets_t *pk = (struct vma_packets_t *)buf;
				CHECK(pk->pkts[0].iov[0].iov_len == (size_t)got, "iovec length");
				id = pk->pkts[0].packet_id;
				data = pk->pkts[0].iov[0].iov_base;
			}
		} else {
			got = read(s, buf, sizeof buf);
		}
		CHECK(got >= 0, "receive");
		if (got == 0)
			break;
		for (ssize_t i = 0; i < got; i++)
			CHECK(data[i] == pattern(total + (size_t)i, 99), "stream byte %zu", total + (size_t)i);
		total += (size_t)got;
		if (zc) {
			struct vma_packet_t pk = {.packet_id = id};
			CHECK(api->free_packets(s, &pk, 1) == 0, "free_packets tcp");
		}
	}
	CHECK(total == STREAM_BYTES, "stream of %zu bytes, want %d", total, STREAM_BYTES);
	printf("tcp stream: %zu bytes in order\n", total);
	close(s);
	close(l);
}

int main(int argc, char **argv) {
	mode = argc > 1 ? argv[1] : "none";
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_api();
	udp();
	tcp();
	printf("done\n");
	return 0;
}

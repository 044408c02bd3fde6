/*
 * sockperf.c: what sockperf 3.7 built with its VMA extra-API support (--enable-vma-api) does with
 * the API, written here against goxio_extra.h.
 *
 *	sockperf none|full|cleared
 *
 * Like sockperf it defines readv and writev as macros before it includes the header (its
 * vma-redirect.h), asks for the API with vma_get_api(), and then plays UDP ping-pong between a
 * client and a server socket:
 *   - zcopy (--vmazcopyread on both sides): each side receives with recvfrom_zcopy into a buffer
 *     of the largest message's size, reads the message through the packet's iovecs, and frees the
 *     packet only at its next receive (sockperf's msg_recvfrom); the server replies to the
 *     address recvfrom_zcopy gave.
 *   - callback (--vmarxfiltercb on the server): the server's callback checks vma_info's size,
 *     answers from inside the callback to *vma_info->src and drops the datagram, so the server's
 *     own non-blocking receive after poll finds nothing; at the end it unregisters the callback
 *     (register_recv_callback(fd, NULL, NULL), as sockperf's close_ifd) and the next datagram
 *     reaches recvfrom.
 * Without the API (no library, or GOXIO_EXTRA_API=0) each side does the same with recvfrom and
 * the server answers itself. stdout is the same in every run; argv[1] says which API the run has.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* sockperf's vma-redirect.h: its own pointers to the I/O functions, the names redefined */
typedef ssize_t (*readv_fptr_t)(int, const struct iovec *, int);
typedef ssize_t (*writev_fptr_t)(int, const struct iovec *, int);
readv_fptr_t fn_readv;
writev_fptr_t fn_writev;
#define readv(...) fn_readv(__VA_ARGS__)
#define writev(...) fn_writev(__VA_ARGS__)

#include "../../shim/goxio_extra.h"

#include "check.h"

#define ROUNDS 3000
#define MAX_MSG 65507

static struct vma_api_t *api;
static int have_zc, have_cb;

/* a message: sequence number, length, then bytes that follow from both */
static size_t msg_len(uint32_t seq) { return 14 + (size_t)(seq * 7919u) % 1400; }

static void make(unsigned char *b, uint32_t seq, int reply) {
	size_t n = msg_len(seq);
	memcpy(b, &seq, 4);
	b[4] = (unsigned char)reply;
	for (size_t i = 5; i < n; i++)
		b[i] = (unsigned char)(seq + i * 3 + (size_t)reply);
}

static int valid(const unsigned char *b, size_t n, uint32_t seq, int reply) {
	uint32_t s;
	memcpy(&s, b, 4);
	if (n != msg_len(seq) || s != seq || b[4] != reply)
		return 0;
	for (size_t i = 5; i < n; i++)
		if (b[i] != (unsigned char)(seq + i * 3 + (size_t)reply))
			return 0;
	return 1;
}

/* sockperf's ZeroCopyData: the packets buffer of the last receive, freed at the next one */
struct zc {
	unsigned char pkt_buf[MAX_MSG];
	struct vma_packets_t *pkts;
};

/* sp_recv is sockperf's msg_recvfrom: the message's bytes (in the packet, or copied into buf) */
static ssize_t sp_recv(int fd, struct zc *z, unsigned char *buf, const unsigned char **data, struct sockaddr_in *from) {
	socklen_t size = sizeof *from;
	if (have_zc) {
		if (z->pkts != NULL && z->pkts->n_packet_num > 0) {
			CHECK(api->free_packets(fd, z->pkts->pkts, z->pkts->n_packet_num) == 0, "free_packets");
			z->pkts = NULL;
		}
		int flags = 0;
		int ret = api->recvfrom_zcopy(fd, z->pkt_buf, MAX_MSG, &flags, (struct sockaddr *)from, &size);
		if (ret > 0 && (flags & MSG_VMA_ZCOPY)) {
			z->pkts = (struct vma_packets_t *)z->pkt_buf;
			struct vma_packet_t *pkt = &z->pkts->pkts[0];
			CHECK(z->pkts->n_packet_num == 1 && pkt->sz_iov >= 1, "packets description");
			size_t off = 0;
			for (size_t i = 0; i < pkt->sz_iov; i++) {
				CHECK(off + pkt->iov[i].iov_len <= MAX_MSG, "iovecs longer than the message");
				memcpy(buf + off, pkt->iov[i].iov_base, pkt->iov[i].iov_len);
				off += pkt->iov[i].iov_len;
			}
			CHECK(off == (size_t)ret, "iovecs hold %zu bytes of %d", off, ret);
			*data = pkt->sz_iov == 1 ? pkt->iov[0].iov_base : buf;
		} else {
			*data = z->pkt_buf; /* copied into the buffer */
		}
		CHECK(size == sizeof *from, "source address length %u", (unsigned)size);
		return ret;
	}
	*data = buf;
	return recvfrom(fd, buf, MAX_MSG, 0, (struct sockaddr *)from, &size);
}

static int srv_fd;
static struct sockaddr_in cli_addr;
static int cb_calls;

static vma_recv_callback_retval_t filter(int fd, size_t iov_sz, struct iovec iov[], struct vma_info_t *info, void *ctx) {
	(void)ctx;
	cb_calls++;
	CHECK(fd == srv_fd && info->struct_sz >= sizeof(struct vma_info_t), "vma_info");
	CHECK(iov_sz == 1, "iovecs %zu", iov_sz);
	const unsigned char *b = iov[0].iov_base;
	uint32_t seq;
	memcpy(&seq, b, 4);
	CHECK(valid(b, iov[0].iov_len, seq, 0), "request %u in the callback", seq);
	CHECK(info->src->sin_port == cli_addr.sin_port, "vma_info src");
	static unsigned char out[MAX_MSG];
	make(out, seq, 1);
	struct sockaddr_in to = *info->src; /* sockperf replies to the source VMA gives */
	CHECK(sendto(fd, out, msg_len(seq), 0, (struct sockaddr *)&to, sizeof to) == (ssize_t)msg_len(seq), "reply in the callback");
	return VMA_PACKET_DROP;
}

static int bound(struct sockaddr_in *a) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	*a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof *a;
	CHECK(bind(s, (struct sockaddr *)a, sizeof *a) == 0 && getsockname(s, (struct sockaddr *)a, &al) == 0, "bind");
	return s;
}

static void zcopy_pingpong(void) {
	struct sockaddr_in sa, ca;
	int srv = bound(&sa), cli = bound(&ca);
	static struct zc zs, zcl;
	static unsigned char out[MAX_MSG], sbuf[MAX_MSG], cbuf[MAX_MSG];
	uint64_t sum = 0;
	for (uint32_t seq = 0; seq < ROUNDS; seq++) {
		make(out, seq, 0);
		CHECK(sendto(cli, out, msg_len(seq), 0, (struct sockaddr *)&sa, sizeof sa) == (ssize_t)msg_len(seq), "ping");
		struct sockaddr_in from;
		const unsigned char *d;
		ssize_t n = sp_recv(srv, &zs, sbuf, &d, &from);
		CHECK(n > 0 && valid(d, (size_t)n, seq, 0), "request %u at the server (%zd bytes)", seq, n);
		CHECK(from.sin_port == ca.sin_port, "request source");
		make(out, seq, 1);
		CHECK(sendto(srv, out, msg_len(seq), 0, (struct sockaddr *)&from, sizeof from) == (ssize_t)msg_len(seq), "pong");
		n = sp_recv(cli, &zcl, cbuf, &d, &from);
		CHECK(n > 0 && valid(d, (size_t)n, seq, 1), "reply %u at the client (%zd bytes)", seq, n);
		CHECK(from.sin_port == sa.sin_port, "reply source");
		sum += (size_t)n + d[(size_t)n - 1];
	}
	/* sockperf's close_ifd: the last packets freed, the callback unregistered, then close */
	if (have_zc) {
		CHECK(api->free_packets(srv, zs.pkts->pkts, zs.pkts->n_packet_num) == 0, "last free");
		CHECK(api->free_packets(cli, zcl.pkts->pkts, zcl.pkts->n_packet_num) == 0, "last free");
		CHECK(api->register_recv_callback(srv, NULL, NULL) == 0, "unregister without a callback");
	}
	printf("zcopy ping-pong: %d rounds, sum %llu\n", ROUNDS, (unsigned long long)sum);
	close(srv);
	close(cli);
}

static void callback_pingpong(void) {
	struct sockaddr_in sa;
	srv_fd = bound(&sa);
	int cli = bound(&cli_addr);
	if (have_cb)
		CHECK(api->register_recv_callback(srv_fd, filter, NULL) == 0, "register_recv_callback");
	static unsigned char out[MAX_MSG], buf[MAX_MSG];
	uint64_t sum = 0;
	for (uint32_t seq = 0; seq < ROUNDS; seq++) {
		make(out, seq, 0);
		CHECK(sendto(cli, out, msg_len(seq), 0, (struct sockaddr *)&sa, sizeof sa) == (ssize_t)msg_len(seq), "ping");
		/* the server's loop: poll, then a receive that does not wait */
		struct pollfd p = {.fd = srv_fd, .events = POLLIN};
		CHECK(poll(&p, 1, 5000) == 1, "server not readable for request %u", seq);
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(srv_fd, buf, MAX_MSG, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (have_cb) {
			CHECK(n == -1 && errno == EAGAIN, "request %u reached recvfrom past the callback (%zd)", seq, n);
		} else {
			CHECK(n > 0 && valid(buf, (size_t)n, seq, 0), "request %u", seq);
			make(out, seq, 1);
			CHECK(sendto(srv_fd, out, msg_len(seq), 0, (struct sockaddr *)&from, fl) == (ssize_t)msg_len(seq), "pong");
		}
		n = recv(cli, buf, MAX_MSG, 0);
		CHECK(n > 0 && valid(buf, (size_t)n, seq, 1), "reply %u at the client (%zd bytes)", seq, n);
		sum += (size_t)n + buf[(size_t)n - 1];
	}
	CHECK(!have_cb || cb_calls == ROUNDS, "%d callbacks for %d requests", cb_calls, ROUNDS);
	if (have_cb)
		CHECK(api->register_recv_callback(srv_fd, NULL, NULL) == 0, "unregister");
	/* unregistered: the next datagram reaches the receive */
	make(out, ROUNDS, 0);
	CHECK(sendto(cli, out, msg_len(ROUNDS), 0, (struct sockaddr *)&sa, sizeof sa) == (ssize_t)msg_len(ROUNDS), "last ping");
	ssize_t n = recv(srv_fd, buf, MAX_MSG, 0);
	CHECK(n > 0 && valid(buf, (size_t)n, ROUNDS, 0), "the datagram after the callback went");
	printf("callback ping-pong: %d rounds, sum %llu\n", ROUNDS, (unsigned long long)sum);
	close(srv_fd);
	close(cli);
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "none";
	setvbuf(stdout, NULL, _IOLBF, 0);
	api = vma_get_api();
	uint64_t zbits = VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS;
	have_zc = api != NULL && (api->vma_extra_supported_mask & zbits) == zbits;
	have_cb = api != NULL && (api->vma_extra_supported_mask & VMA_EXTRA_API_REGISTER_RECV_CALLBACK);
	CHECK(have_zc == (strcmp(mode, "full") == 0) && have_cb == have_zc, "API in mode %s: zcopy %d callback %d", mode,
	      have_zc, have_cb);
	CHECK(fn_readv == NULL && fn_writev == NULL, "redirect pointers");
	zcopy_pingpong();
	callback_pingpong();
	printf("done\n");
	return 0;
}

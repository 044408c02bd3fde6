/*
 * header.c: get_socket_network_header as a program written against goxio_extra.h uses it.
 *
 * A UDP socket connected to a receiver on loopback, with its own TOS and TTL, sends a datagram;
 * with the API ("full") its network header must carry the socket's MACs (loopback: zero),
 * addresses, ports, TOS, TTL and DF as the datagram does. When the program may open a packet socket
 * (root in a private network namespace, as the tests run), the datagram itself is captured on lo
 * and compared with the header field by field (lengths, IPv4 id and checksums excepted: they differ
 * per datagram). The probes: EINVAL for a pipe, ENOTCONN for an unconnected socket, the size for a
 * NULL buffer, ENOBUFS for a short one. stdout, the data, is the same without the API.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../shim/goxio_extra.h"

#include "check.h"

/* same compares the header with a captured frame, skipping the per-datagram fields. */
static void same(const unsigned char *h, const unsigned char *f) {
	static const int skip[] = {14 + 2, 14 + 3, 14 + 4, 14 + 5, 14 + 10, 14 + 11, 34 + 4, 34 + 5, 34 + 6, 34 + 7};
	for (int i = 0; i < 42; i++) {
		int s = 0;
		for (size_t k = 0; k < sizeof skip / sizeof skip[0]; k++)
			s |= skip[k] == i;
		CHECK(s || h[i] == f[i], "header byte %d: %#x, the datagram has %#x", i, h[i], f[i]);
	}
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "none";
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct vma_api_t *api = goxio_get_api();
	int use = api != NULL && (api->vma_extra_supported_mask & VMA_EXTRA_API_GET_SOCKET_NETWORK_HEADER);
	CHECK(use == (strcmp(mode, "full") == 0), "network header offered: %d in mode %s", use, mode);

	int cap = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	if (cap >= 0) {
		struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP), .sll_ifindex = (int)if_nametoindex("lo")};
		CHECK(bind(cap, (struct sockaddr *)&ll, sizeof ll) == 0, "bind the packet socket");
	}
	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)}, t;
	socklen_t al = sizeof a, tl = sizeof t;
	CHECK(bind(rx, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(rx, (struct sockaddr *)&a, &al) == 0, "bind");
	int tos = 0x28, ttl = 33;
	CHECK(setsockopt(tx, IPPROTO_IP, IP_TOS, &tos, sizeof tos) == 0 && setsockopt(tx, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl) == 0,
	      "TOS and TTL");
	if (use) {
		unsigned char h[64];
		uint16_t hl = sizeof h;
		errno = 0;
		CHECK(api->get_socket_network_header(tx, h, &hl) == -1 && errno == ENOTCONN, "an unconnected socket");
		int p[2];
		CHECK(pipe(p) == 0, "pipe");
		errno = 0;
		CHECK(api->get_socket_network_header(p[0], h, &hl) == -1 && errno == EINVAL, "a pipe");
		close(p[0]);
		close(p[1]);
	}
	CHECK(connect(tx, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(tx, (struct sockaddr *)&t, &tl) == 0, "connect");
	CHECK(send(tx, "header", 6, 0) == 6, "send");
	char buf[16];
	CHECK(recv(rx, buf, sizeof buf, 0) == 6 && memcmp(buf, "header", 6) == 0, "recv");
	printf("datagram ok\n");
	if (!use) {
		printf("done\n");
		return 0;
	}

	uint16_t hl = 0;
	CHECK(api->get_socket_network_header(tx, NULL, &hl) == 0 && hl == 42, "the size: %u", hl);
	unsigned char h[64];
	hl = 20;
	errno = 0;
	CHECK(api->get_socket_network_header(tx, h, &hl) == -1 && errno == ENOBUFS && hl == 42, "a short buffer");
	hl = sizeof h;
	CHECK(api->get_socket_network_header(tx, h, &hl) == 0 && hl == 42, "get_socket_network_header");
	static const unsigned char zero[12];
	CHECK(memcmp(h, zero, 12) == 0 && h[12] == 0x08 && h[13] == 0x00, "Ethernet header of loopback");
	const unsigned char *ip = h + 14, *udp = h + 34;
	CHECK(ip[0] == 0x45 && ip[1] == tos && ip[8] == ttl && ip[9] == IPPROTO_UDP && (ip[6] & 0x40), "IPv4 header");
	CHECK(memcmp(ip + 12, &t.sin_addr, 4) == 0 && memcmp(ip + 16, &a.sin_addr, 4) == 0, "IPv4 addresses");
	CHECK(memcmp(udp, &t.sin_port, 2) == 0 && memcmp(udp + 2, &a.sin_port, 2) == 0, "UDP ports");
	if (cap >= 0) {
		/* the kernel's own datagram from this socket (under the shared-memory transport the
		 * datagrams never reach lo) */
		unsigned char f[2048];
		int found = 0;
		for (int tries = 0; tries < 50 && !found; tries++) {
			CHECK(send(tx, "again", 5, 0) == 5, "send again");
			struct pollfd pf = {.fd = cap, .events = POLLIN};
			while (poll(&pf, 1, 20) > 0) {
				ssize_t n = recv(cap, f, sizeof f, 0);
				if (n >= 42 && f[14 + 9] == IPPROTO_UDP && memcmp(f + 34, udp, 4) == 0) {
					found = 1;
					break;
				}
			}
		}
		if (found) {
			same(h, f);
			fprintf(stderr, "header equals the captured datagram's\n");
		} else {
			fprintf(stderr, "no datagram of the socket on lo (not carried by the kernel)\n");
		}
		while (recv(rx, buf, sizeof buf, MSG_DONTWAIT) > 0) {
		}
	}
	printf("done\n");
	return 0;
}

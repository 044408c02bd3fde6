/* early_udp: UDP sockets that talk with a goxio server in their early phase (shim/preload/early.c).
 *
 *   early_udp server PORT       echoes every datagram received on 127.0.0.1:PORT to its sender,
 *                               until it receives "quit".
 *   early_udp client PORT SOCKS MSGS [stream]
 *                               SOCKS sockets one after the other: socket, SO_RCVTIMEO of 5 s,
 *                               MSGS requests each sent with sendto and its echo read back with
 *                               recvfrom and compared (from the server's address, the socket's
 *                               and the request's numbers in it), close. stream: the MSGS
 *                               requests are sent back to back, then the MSGS echoes read,
 *                               each the next in the order sent. Prints "client socks=SOCKS
 *                               msgs=MSGS ok calls=C io=IO loaded=L".
 *
 * C: the calls the thread made into goxio's engine during every socket but the first two
 * (goxio_thread_engine_calls of libgoxio.so; -1 without it): the first two may load the engine
 * (a socket that keeps talking does) or teach the library where the server is. IO: the UDP
 * datagrams the kernel sent in the network namespace during those sockets (/proc/net/snmp
 * OutDatagrams: the client's and the server's): datagrams that moved to shared-memory rings are
 * not among them. L: whether libgoxio-engine.so is mapped at the end (a process whose sockets
 * never left their early phase needs none). SOCKS is at least 3. Any failure prints
 * "error ..." and exits with status 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "progs.h"

static long io_calls(void) {
	FILE *f = fopen("/proc/net/snmp", "r");
	char line[512];
	long n = -1;
	int header = 0;
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "Udp: ", 5) != 0)
			continue;
		if (!header++)
			continue;
		/* Udp: InDatagrams NoPorts InErrors OutDatagrams ... */
		long in, noports, inerr, out;
		if (sscanf(line + 5, "%ld %ld %ld %ld", &in, &noports, &inerr, &out) == 4)
			n = out;
	}
	fclose(f);
	return n;
}

static void serve(int port) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = lo(port);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0)
		die("bind");
	char buf[2048];
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
		if (n < 0)
			die("recvfrom");
		if (n == 4 && memcmp(buf, "quit", 4) == 0)
			exit(0);
		if (sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from, fl) != n)
			die("sendto");
	}
}

/* request writes request j of socket i into b: its numbers and a pattern of them, 16 + j % 9 bytes. */
static size_t request(char *b, int i, int j) {
	size_t n = (size_t)snprintf(b, 64, "s%d m%d ", i, j);
	size_t len = 16 + (size_t)(j % 9);
	for (size_t k = n; k < len; k++)
		b[k] = (char)('a' + (i + j + (int)k) % 26);
	return len;
}

/* echo reads one datagram on s and checks that it is request j of socket i from server a. */
static void echo(int s, const struct sockaddr_in *a, int i, int j) {
	char want[64], got[2048];
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	size_t n = request(want, i, j);
	ssize_t r = recvfrom(s, got, sizeof got, 0, (struct sockaddr *)&from, &fl);
	if (r < 0)
		die("recvfrom");
	if ((size_t)r != n || memcmp(got, want, n) != 0 || fl != sizeof from || from.sin_port != a->sin_port ||
	    from.sin_addr.s_addr != a->sin_addr.s_addr) {
		printf("error echo: socket %d message %d: got %.*s (%zd bytes)\n", i, j, (int)(r > 40 ? 40 : r), got, r);
		exit(1);
	}
}

static void client(int port, int socks, int msgs, int stream) {
	static struct sockaddr_in a; /* one address, as a client keeps its server's */
	a = lo(port);
	long c0 = 0, io0 = 0;
	for (int i = 0; i < socks; i++) {
		if (i == 2) {
			c0 = calls();
			io0 = io_calls();
		}
		struct timeval tv = {5, 0};
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		if (s < 0 || setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
			die("socket");
		char b[64];
		for (int j = 0; j < msgs; j++) {
			size_t n = request(b, i, j);
			if (sendto(s, b, n, 0, (const struct sockaddr *)&a, sizeof a) != (ssize_t)n)
				die("sendto");
			if (!stream)
				echo(s, &a, i, j);
		}
		for (int j = 0; stream && j < msgs; j++)
			echo(s, &a, i, j);
		if (close(s) != 0)
			die("close");
	}
	long c1 = calls(), io1 = io_calls();
	printf("client socks=%d msgs=%d ok calls=%ld io=%ld loaded=%d\n", socks, msgs, c0 < 0 ? -1 : c1 - c0, io1 - io0,
	       engine_loaded());
}

int main(int argc, char **argv) {
	progs_init();
	if (argc == 3 && strcmp(argv[1], "server") == 0) {
		serve(atoi(argv[2]));
	} else if ((argc == 5 || argc == 6) && strcmp(argv[1], "client") == 0 && atoi(argv[3]) >= 3) {
		client(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), argc == 6 && strcmp(argv[5], "stream") == 0);
		return 0;
	}
	fprintf(stderr, "usage: early_udp server PORT | early_udp client PORT SOCKS MSGS [stream]\n");
	return 2;
}

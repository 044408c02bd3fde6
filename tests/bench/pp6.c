/*
 * pp6: a ping-pong over any address family, for the IPv6 part of the bench (Debian's sockperf 3.7
 * rejects IPv6 addresses).
 *
 *   pp6 server tcp|udp ADDR PORT              echo every message until killed
 *   pp6 client tcp|udp ADDR PORT SECONDS SIZE  ping-pong SIZE-byte messages for SECONDS (after
 *                                              0.5 s of warm-up) and print
 *                                              "rtts=N avg_us=.. p50_us=.. p99_us=.. p999_us=.."
 *                                              (half round trips, as sockperf reports latency)
 * ADDR is numeric (::1, ::ffff:127.0.0.1, 127.0.0.1). Every call is checked; a failure exits 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "pp6: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* xfer moves exactly n bytes (TCP) or one message (UDP) in or out. */
static void xfer(int fd, char *buf, size_t n, int out, int tcp)
{
	for (size_t done = 0; done < n;) {
		ssize_t k = out ? send(fd, buf + done, n - done, 0) : recv(fd, buf + done, n - done, 0);
		if (k <= 0)
			die(out ? "send" : "recv");
		done += (size_t)k;
		if (!tcp)
			return;
	}
}

int main(int argc, char **argv)
{
	if (argc < 5 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    (strcmp(argv[2], "tcp") && strcmp(argv[2], "udp"))) {
		fprintf(stderr, "usage: pp6 server|client tcp|udp ADDR PORT [SECONDS SIZE]\n");
		return 2;
	}
	int server = !strcmp(argv[1], "server"), tcp = !strcmp(argv[2], "tcp");
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV, .ai_socktype = tcp ? SOCK_STREAM : SOCK_DGRAM}, *ai;
	int e = getaddrinfo(argv[3], argv[4], &hints, &ai);
	if (e != 0) {
		fprintf(stderr, "pp6: %s: %s\n", argv[3], gai_strerror(e));
		return 1;
	}
	int fd = socket(ai->ai_family, ai->ai_socktype, 0), one = 1;
	if (fd < 0)
		die("socket");
	char buf[65536];
	if (server) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
			die("bind");
		if (!tcp) {
			for (;;) {
				struct sockaddr_storage from;
				socklen_t fl = sizeof from;
				ssize_t k = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
				if (k < 0)
					die("recvfrom");
				if (sendto(fd, buf, (size_t)k, 0, (struct sockaddr *)&from, fl) != k)
					die("sendto");
			}
		}
		if (listen(fd, 8) != 0)
			die("listen");
		for (;;) {
			int c = accept(fd, NULL, NULL);
			if (c < 0)
				die("accept");
			setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			uint32_t size;
			if (recv(c, &size, sizeof size, MSG_WAITALL) == sizeof size && size > 0 && size <= sizeof buf)
				while (recv(c, buf, size, MSG_WAITALL) == (ssize_t)size)
					xfer(c, buf, size, 1, 1);
			close(c);
		}
	}
	if (argc < 7)
		die("client needs SECONDS and SIZE");
	double secs = atof(argv[5]);
	uint32_t size = (uint32_t)atoi(argv[6]);
	if (size == 0 || size > sizeof buf || secs <= 0)
		die("bad SECONDS or SIZE");
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
		die("connect");
	if (tcp) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		xfer(fd, (char *)&size, sizeof size, 1, 1);
	}
	memset(buf, 'x', size);
	size_t cap = 1 << 22, n = 0;
	double *rtt = malloc(cap * sizeof *rtt);
	if (rtt == NULL)
		die("malloc");
	double start = now_us(), warm = start + 500000, end = warm + secs * 1e6, t;
	while ((t = now_us()) < end) {
		xfer(fd, buf, size, 1, tcp);
		xfer(fd, buf, size, 0, tcp);
		double d = now_us() - t;
		if (t >= warm && n < cap)
			rtt[n++] = d / 2;
	}
	if (n == 0)
		die("no round trip");
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += rtt[i];
	qsort(rtt, n, sizeof *rtt, cmp);
	printf("rtts=%zu avg_us=%.3f p50_us=%.3f p99_us=%.3f p999_us=%.3f\n", n, sum / n, rtt[n / 2], rtt[n * 99 / 100],
	       rtt[n * 999 / 1000]);
	return 0;
}

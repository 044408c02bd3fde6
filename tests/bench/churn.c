/*
 * churn: the cost of short-lived sockets, as programs that open a connection or a socket per
 * request pay it (HTTP/1.0 clients, health checks, RPC clients).
 *
 *   churn server tcp|udp PORT            serve on 127.0.0.1:PORT until killed: tcp accepts, reads
 *                                        1 byte, writes 1 byte, closes; udp echoes each datagram
 *   churn client tcp|udp PORT ROUNDS     ROUNDS rounds, each timed: tcp connect, write 1 byte, read
 *                                        1 byte, close; udp socket, sendto 1 byte, recv, close
 *
 * The client prints "rounds=N p50_us=X p90_us=X p99_us=X avg_us=X" after 10% warm-up rounds.
 * Every error is fatal with a message (a benchmark must not count failed rounds as fast ones).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "churn: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct sockaddr_in addr_of(int port)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void serve_tcp(int port)
{
	struct sockaddr_in sa = addr_of(port);
	int one = 1;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0)
		die("socket");
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		die("bind");
	if (listen(l, 1024) != 0)
		die("listen");
	for (;;) {
		char b;
		int c = accept(l, NULL, NULL);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (read(c, &b, 1) == 1 && write(c, &b, 1) != 1)
			fprintf(stderr, "churn: server write: %s\n", strerror(errno));
		close(c);
	}
}

static void serve_udp(int port)
{
	struct sockaddr_in sa = addr_of(port);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		die("bind");
	for (;;) {
		char b[64];
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(s, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("recvfrom");
		}
		if (sendto(s, b, (size_t)n, 0, (struct sockaddr *)&from, fl) != n)
			die("sendto");
	}
}

static void round_tcp(const struct sockaddr_in *sa)
{
	char b = 'x';
	int one = 1;
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0)
		die("socket");
	if (connect(c, (const struct sockaddr *)sa, sizeof(*sa)) != 0)
		die("connect");
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (write(c, &b, 1) != 1)
		die("write");
	if (read(c, &b, 1) != 1)
		die("read");
	if (close(c) != 0)
		die("close");
}

static void round_udp(const struct sockaddr_in *sa)
{
	char b = 'x';
	struct timeval tv = {2, 0};
	int c = socket(AF_INET, SOCK_DGRAM, 0);
	if (c < 0)
		die("socket");
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(c, &b, 1, 0, (const struct sockaddr *)sa, sizeof(*sa)) != 1)
		die("sendto");
	if (recv(c, &b, 1, 0) != 1)
		die("recv (no answer in 2 s)");
	if (close(c) != 0)
		die("close");
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: churn server tcp|udp PORT | churn client tcp|udp PORT ROUNDS\n");
		return 2;
	}
	int tcp = strcmp(argv[2], "tcp") == 0;
	int port = atoi(argv[3]);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(argv[1], "server") == 0) {
		if (tcp)
			serve_tcp(port);
		serve_udp(port);
		return 0;
	}
	if (argc < 5)
		return 2;
	int rounds = atoi(argv[4]);
	if (rounds < 10 || rounds > 10000000) {
		fprintf(stderr, "churn: ROUNDS must be 10..10000000\n");
		return 2;
	}
	int warm = rounds / 10;
	double *t = malloc(sizeof(double) * (size_t)rounds);
	if (!t)
		die("malloc");
	struct sockaddr_in sa = addr_of(port);
	double sum = 0;
	for (int i = 0; i < warm + rounds; i++) {
		double t0 = now_us();
		if (tcp)
			round_tcp(&sa);
		else
			round_udp(&sa);
		double d = now_us() - t0;
		if (i >= warm) {
			t[i - warm] = d;
			sum += d;
		}
	}
	qsort(t, (size_t)rounds, sizeof(double), cmp_double);
	printf("rounds=%d p50_us=%.2f p90_us=%.2f p99_us=%.2f avg_us=%.2f\n", rounds, t[rounds / 2],
	       t[rounds * 9 / 10], t[rounds * 99 / 100], sum / rounds);
	return 0;
}

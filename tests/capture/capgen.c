/* capgen: deterministic traffic for the goxio capture tests (tests/capture_test.go).
 *
 *   capgen udp N      One process: receivers on 127.0.0.1:9001, 127.0.0.1:9002, 0.0.0.0:9003 and a
 *                     member of 239.1.2.3:9100 (joined on 127.0.0.1); senders bound to
 *                     127.0.0.1:8001, :8002 and :8003 (multicast, IP_MULTICAST_IF 127.0.0.1).
 *                     Prints "ready", waits for "go" on stdin, then sends N datagrams (sender,
 *                     destination and length a function of the index; every receiver reads each
 *                     one before the next is sent and checks it), prints "done N bad B"; another
 *                     "go" sends the same N again, "exit" or the end of stdin ends.
 *   capgen udprx      Two-process variant, receiving side: 127.0.0.1:9001 ... as above without
 *                     senders; prints "ready", receives until "exit" (poll on stdin too), then
 *                     prints "got N".
 *   capgen udptx N    Sending side: waits for "go", sends N datagrams to 127.0.0.1:9001-9002 from
 *                     127.0.0.1:8001, 100 us apart, prints "done N".
 *   capgen tcp N      One process: a listener on 127.0.0.1:9200 (tcp6: [::1]:9200) and a client; after "go", N
 *                     request/response exchanges of lengths f(i) and g(i) (checked), then close;
 *                     prints "done N bad B".
 *   capgen flood S    After "go", sends 64-byte datagrams from 127.0.0.1:8001 to 127.0.0.1:9001
 *                     (received by a thread) for S seconds; prints "sent N got M".
 *
 * Exit codes: 0 done, 2 a system call failed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* engine_up makes the library load its engine now (under goxio it loads at a process's first data
 * call or wait on an inet socket, and adopts the sockets made before): a zero-timeout poll on a
 * throwaway UDP socket, so that the process has its statistics segment, and its sockets their
 * transports, before it says "ready" to the capture tool. Without the library: a poll. */
static void engine_up(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	struct pollfd p = {.fd = fd, .events = POLLIN};
	poll(&p, 1, 0);
	close(fd);
}

static int udp_bound(const char *addr, int port)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind");
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

static void wait_word(const char *word)
{
	char line[64];
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, word, strlen(word)) == 0)
			return;
	}
}

static void fill(unsigned char *b, int n, int i)
{
	for (int k = 0; k < n; k++)
		b[k] = (unsigned char)(i * 31 + k * 7);
}

static int check(const unsigned char *b, int n, int i)
{
	for (int k = 0; k < n; k++)
		if (b[k] != (unsigned char)(i * 31 + k * 7))
			return 0;
	return 1;
}

static struct sockaddr_in addr(const char *a, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, a, &sa.sin_addr);
	return sa;
}

static int udp_main(int n)
{
	int r1 = udp_bound("127.0.0.1", 9001), r2 = udp_bound("127.0.0.1", 9002), r3 = udp_bound("0.0.0.0", 9003);
	int rm = udp_bound("0.0.0.0", 9100);
	struct ip_mreq mr;
	inet_pton(AF_INET, "239.1.2.3", &mr.imr_multiaddr);
	inet_pton(AF_INET, "127.0.0.1", &mr.imr_interface);
	if (setsockopt(rm, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr) < 0)
		die("IP_ADD_MEMBERSHIP");
	int s1 = udp_bound("127.0.0.1", 8001), s2 = udp_bound("127.0.0.1", 8002), s3 = udp_bound("127.0.0.1", 8003);
	struct in_addr ifa;
	inet_pton(AF_INET, "127.0.0.1", &ifa);
	if (setsockopt(s3, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof ifa) < 0)
		die("IP_MULTICAST_IF");
	engine_up();
	printf("ready\n");
	fflush(stdout);
	wait_word("go");
	static unsigned char buf[65536], got[65536];
	char line[64];
again:;
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int len = (i * 37) % 1473;
		if (i % 11 == 5)
			len = 0;
		int sfd = i % 4 == 3 ? s2 : s1, rfd;
		struct sockaddr_in dst;
		switch (i % 5) {
		case 0: dst = addr("127.0.0.1", 9001), rfd = r1; break;
		case 1: dst = addr("127.0.0.1", 9002), rfd = r2; break;
		case 2: dst = addr("127.0.0.1", 9003), rfd = r3; break;
		case 3: dst = addr("127.0.0.2", 9003), rfd = r3; break;
		default: dst = addr("239.1.2.3", 9100), rfd = rm, sfd = s3; break;
		}
		fill(buf, len, i);
		if (sendto(sfd, buf, len, 0, (struct sockaddr *)&dst, sizeof dst) != len)
			die("sendto");
		ssize_t m = recv(rfd, got, sizeof got, 0);
		if (m != len || !check(got, len, i))
			bad++;
	}
	printf("done %d bad %d\n", n, bad);
	fflush(stdout);
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "go", 2) == 0)
			goto again;
		if (strncmp(line, "exit", 4) == 0)
			break;
	}
	return 0;
}

static int udprx_main(void)
{
	int r1 = udp_bound("127.0.0.1", 9001), r2 = udp_bound("127.0.0.1", 9002);
	engine_up();
	printf("ready\n");
	fflush(stdout);
	struct pollfd p[3] = {{.fd = 0, .events = POLLIN}, {.fd = r1, .events = POLLIN}, {.fd = r2, .events = POLLIN}};
	static unsigned char got[65536];
	long n = 0;
	for (;;) {
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		for (int k = 1; k < 3; k++)
			if (p[k].revents & POLLIN && recv(p[k].fd, got, sizeof got, MSG_DONTWAIT) >= 0)
				n++;
		if (p[0].revents) {
			char line[64];
			if (!fgets(line, sizeof line, stdin) || strncmp(line, "exit", 4) == 0)
				break;
		}
	}
	/* "exit" may come while datagrams the sender finished sending still wait: take them */
	for (int k = 1; k < 3; k++)
		while (recv(p[k].fd, got, sizeof got, MSG_DONTWAIT) >= 0)
			n++;
	printf("got %ld\n", n);
	return 0;
}

static int udptx_main(int n)
{
	int s1 = udp_bound("127.0.0.1", 8001);
	engine_up();
	printf("ready\n");
	fflush(stdout);
	wait_word("go");
	static unsigned char buf[2048];
	for (int i = 0; i < n; i++) {
		int len = 1 + (i * 37) % 1400;
		struct sockaddr_in dst = addr("127.0.0.1", 9001 + i % 2);
		fill(buf, len, i);
		if (sendto(s1, buf, len, 0, (struct sockaddr *)&dst, sizeof dst) != len)
			die("sendto");
		usleep(100);
	}
	printf("done %d\n", n);
	fflush(stdout);
	return 0;
}

static int readn(int fd, unsigned char *b, int n)
{
	int got = 0;
	while (got < n) {
		ssize_t m = read(fd, b + got, n - got);
		if (m <= 0)
			return got;
		got += m;
	}
	return got;
}

static int writen(int fd, const unsigned char *b, int n)
{
	int put = 0;
	while (put < n) {
		ssize_t m = write(fd, b + put, n - put);
		if (m <= 0)
			die("write");
		put += m;
	}
	return put;
}

static int tcp_main(int n, int v6)
{
	int fam = v6 ? AF_INET6 : AF_INET;
	int l = socket(fam, SOCK_STREAM, 0), one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof ss);
	if (v6) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(9200);
		a6->sin6_addr = in6addr_loopback;
		sl = sizeof *a6;
	} else {
		struct sockaddr_in a4 = addr("127.0.0.1", 9200);
		memcpy(&ss, &a4, sizeof a4);
		sl = sizeof a4;
	}
	struct sockaddr *sa = (struct sockaddr *)&ss;
	if (bind(l, sa, sl) < 0 || listen(l, 4) < 0)
		die("listen");
	engine_up();
	printf("ready\n");
	fflush(stdout);
	wait_word("go");
	int c = socket(fam, SOCK_STREAM, 0);
	if (connect(c, sa, sl) < 0)
		die("connect");
	int s = accept(l, NULL, NULL);
	if (s < 0)
		die("accept");
	static unsigned char buf[70000], got[70000];
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int q = 1 + (i * 331) % 3000, r = 1 + (i * 977) % 5000;
		fill(buf, q, i);
		writen(c, buf, q);
		if (readn(s, got, q) != q || !check(got, q, i))
			bad++;
		fill(buf, r, i + 1000);
		writen(s, buf, r);
		if (readn(c, got, r) != r || !check(got, r, i + 1000))
			bad++;
	}
	close(c);
	close(s);
	printf("done %d bad %d\n", n, bad);
	fflush(stdout);
	wait_word("exit");
	return 0;
}

static volatile int flooding = 1;
static long flood_got;

static void *flood_rx(void *arg)
{
	int fd = *(int *)arg;
	unsigned char b[2048];
	struct timeval tv = {.tv_usec = 200000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	while (flooding || recv(fd, b, sizeof b, MSG_DONTWAIT) > 0)
		if (recv(fd, b, sizeof b, 0) > 0)
			flood_got++;
	return NULL;
}

static int flood_main(int secs)
{
	int r = udp_bound("127.0.0.1", 9001), s = udp_bound("127.0.0.1", 8001);
	engine_up();
	printf("ready\n");
	fflush(stdout);
	wait_word("go");
	pthread_t th;
	pthread_create(&th, NULL, flood_rx, &r);
	struct sockaddr_in dst = addr("127.0.0.1", 9001);
	unsigned char buf[64] = {0};
	long sent = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int k = 0; k < 256; k++)
			if (sendto(s, buf, sizeof buf, 0, (struct sockaddr *)&dst, sizeof dst) == sizeof buf)
				sent++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < secs);
	flooding = 0;
	pthread_join(th, NULL);
	printf("sent %ld got %ld\n", sent, flood_got);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: capgen udp|udprx|udptx|tcp|tcp6|flood [N]\n");
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 0;
	if (!strcmp(argv[1], "udp"))
		return udp_main(n);
	if (!strcmp(argv[1], "udprx"))
		return udprx_main();
	if (!strcmp(argv[1], "udptx"))
		return udptx_main(n);
	if (!strcmp(argv[1], "tcp"))
		return tcp_main(n, 0);
	if (!strcmp(argv[1], "tcp6"))
		return tcp_main(n, 1);
	if (!strcmp(argv[1], "flood"))
		return flood_main(n);
	fprintf(stderr, "capgen: unknown mode %s\n", argv[1]);
	return 2;
}

/* Helpers shared by the semantic test programs.
 *
 * Each program prints a deterministic transcript on stdout: return values, errno names, bytes
 * received and flags, never fd numbers, kernel-chosen ports, pids or timings. The Go test runs
 * each program without and with LD_PRELOAD=libgoxio.so and requires identical transcripts and exit
 * codes. The programs also check the kernel's documented behaviour themselves (E(), CHECK()), so a
 * wrong expectation shows up in the reference run too; the exit code is 1 when any check failed.
 */
#ifndef GOXIO_SEMANTIC_COMMON_H
#define GOXIO_SEMANTIC_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_fail;

/* out prints and flushes at once, so the transcript survives fork, exec and _exit. */
static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static const char *ename(int e)
{
	const char *n = e ? strerrorname_np(e) : "0";
	return n ? n : "E?";
}

/* die reports a broken test set-up (not a semantic result) and exits with 100. */
#define die(...) do { int e_ = errno; out("FATAL line %d: ", __LINE__); out(__VA_ARGS__); \
	out(": %s\n", ename(e_)); exit(100); } while (0)

/* V prints "label = r" or "label = -1 ENAME" and returns r with errno kept. */
static long V(const char *label, long r)
{
	int e = errno;
	if (r < 0)
		out("%s = %ld %s\n", label, r, ename(e));
	else
		out("%s = %ld\n", label, r);
	errno = e;
	return r;
}

/* E is V that also checks the result against the kernel's documented one: want, and for -1 the
 * errno werr. A mismatch is printed and counted. */
static long E(const char *label, long r, long want, int werr)
{
	int e = errno;
	V(label, r);
	if (r != want || (r < 0 && e != werr)) {
		out("  CHECK FAILED: expected %ld %s\n", want, want < 0 ? ename(werr) : "");
		g_fail++;
	}
	errno = e;
	return r;
}

/* OK prints "label = ok" for a non-negative result whose value is not stable (an fd number, a
 * length that varies), or the errno name, and counts a failure for -1. */
static long OK(const char *label, long r)
{
	int e = errno;
	if (r < 0) {
		out("%s = -1 %s\n  CHECK FAILED: expected success\n", label, ename(e));
		g_fail++;
	} else {
		out("%s = ok\n", label);
	}
	errno = e;
	return r;
}

/* CHECK prints "label: yes" or "label: no" and counts a failure when cond is false. */
#define CHECK(label, cond) do { int c_ = !!(cond); out("%s: %s\n", (label), c_ ? "yes" : "no"); \
	if (!c_) { out("  CHECK FAILED at line %d\n", __LINE__); g_fail++; } } while (0)

/* finish prints the failure count and returns the exit code. */
static int finish(void)
{
	out("failures = %d\n", g_fail);
	return g_fail ? 1 : 0;
}

static struct sockaddr_in lo_addr(int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* addr6 is the IPv6 address ip (numeric, :: forms and v4-mapped ones too) with port. */
static struct sockaddr_in6 addr6(const char *ip, int port)
{
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof a);
	a.sin6_family = AF_INET6;
	if (inet_pton(AF_INET6, ip, &a.sin6_addr) != 1)
		die("inet_pton %s", ip);
	a.sin6_port = htons((uint16_t)port);
	return a;
}

/* port_of is fd's local port, for an AF_INET or AF_INET6 socket (the port lies at the same offset
 * in sockaddr_in and sockaddr_in6). */
static int port_of(int fd)
{
	struct sockaddr_storage a;
	socklen_t l = sizeof a;
	if (getsockname(fd, (struct sockaddr *)&a, &l) < 0)
		die("getsockname");
	return ntohs(((struct sockaddr_in *)&a)->sin_port);
}

static int peer_port_of(int fd)
{
	struct sockaddr_in a;
	socklen_t l = sizeof a;
	if (getpeername(fd, (struct sockaddr *)&a, &l) < 0)
		die("getpeername");
	return ntohs(a.sin_port);
}

/* udp_bound returns a UDP socket (type flags ORed in) bound to 127.0.0.1:0. */
static int udp_bound(int flags)
{
	int fd = socket(AF_INET, SOCK_DGRAM | flags, 0);
	if (fd < 0)
		die("socket udp");
	struct sockaddr_in a = lo_addr(0);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind udp");
	return fd;
}

static int udp_connect_to(int fd, int port)
{
	struct sockaddr_in a = lo_addr(port);
	return connect(fd, (struct sockaddr *)&a, sizeof a);
}

static ssize_t udp_send_to(int fd, const void *buf, size_t n, int port)
{
	struct sockaddr_in a = lo_addr(port);
	return sendto(fd, buf, n, 0, (struct sockaddr *)&a, sizeof a);
}

/* tcp_listener returns a TCP socket listening on 127.0.0.1:0. */
static int tcp_listener(int flags)
{
	int fd = socket(AF_INET, SOCK_STREAM | flags, 0);
	if (fd < 0)
		die("socket tcp");
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = lo_addr(0);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind tcp");
	if (listen(fd, 64) < 0)
		die("listen");
	return fd;
}

static int tcp_connect_port(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket tcp");
	struct sockaddr_in a = lo_addr(port);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("connect tcp");
	return fd;
}

/* tcp_pair connects *c to a fresh listener and returns the accepted end in *s. */
static void tcp_pair(int *c, int *s)
{
	int l = tcp_listener(0);
	*c = tcp_connect_port(port_of(l));
	*s = accept(l, NULL, NULL);
	if (*s < 0)
		die("accept");
	close(l);
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* udp_warm makes the UDP sockets r and s exchange a few datagrams both ways, so that each has
 * found the other's ring (under goxio) before the test proper. */
static void udp_warm(int r, int s)
{
	for (int i = 0; i < 4; i++) {
		char b[8];
		udp_send_to(s, "w", 1, port_of(r));
		if (recv(r, b, sizeof b, 0) != 1)
			die("warm recv");
		udp_send_to(r, "w", 1, port_of(s));
		if (recv(s, b, sizeof b, 0) != 1)
			die("warm recv back");
	}
}

/* wait_readable polls fd for POLLIN up to ms milliseconds; returns 1 when readable. */
static int wait_readable(int fd, int ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	int r;
	do {
		r = poll(&p, 1, ms);
	} while (r < 0 && errno == EINTR);
	return r > 0;
}

/* wait_bytes waits up to 3 s until FIONREAD on fd reports at least n bytes; returns 1 on success. */
static int wait_bytes(int fd, int n)
{
	for (int i = 0; i < 300; i++) {
		int avail = 0;
		if (ioctl(fd, FIONREAD, &avail) == 0 && avail >= n)
			return 1;
		msleep(10);
	}
	return 0;
}

/* show prints a byte string with non-printable bytes escaped. */
static void show(const char *label, const void *buf, long n)
{
	const unsigned char *p = buf;
	printf("%s = \"", label);
	for (long i = 0; i < n && i < 200; i++) {
		if (p[i] >= 32 && p[i] < 127 && p[i] != '"' && p[i] != '\\')
			putchar(p[i]);
		else
			printf("\\x%02x", p[i]);
	}
	printf("%s\"\n", n > 200 ? "..." : "");
	fflush(stdout);
}

/* fill writes a position-dependent pattern; verify checks it, offset is the stream position. */
static void fill(unsigned char *b, size_t n, size_t off)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)((off + i) * 7 + ((off + i) >> 8));
}

static int verify(const unsigned char *b, size_t n, size_t off)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)((off + i) * 7 + ((off + i) >> 8)))
			return 0;
	return 1;
}

/* send_all writes n bytes, looping on partial writes. */
static int send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* recv_all reads exactly n bytes unless EOF or error comes first; returns the count read. */
static long recv_all(int fd, void *buf, size_t n)
{
	char *p = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, p + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return (long)got;
}

static const char *yesno(int v)
{
	return v ? "yes" : "no";
}

/* pollbits names the poll(2) revents bits set in v. */
static const char *pollbits(int v)
{
	static char buf[8][128];
	static int k;
	char *b = buf[k++ & 7];
	b[0] = 0;
	if (v == 0) {
		strcpy(b, "0");
		return b;
	}
	static const struct { int bit; const char *name; } names[] = {
		{ POLLIN, "IN" }, { POLLPRI, "PRI" }, { POLLOUT, "OUT" }, { POLLERR, "ERR" },
		{ POLLHUP, "HUP" }, { POLLNVAL, "NVAL" }, { POLLRDNORM, "RDNORM" },
		{ POLLRDBAND, "RDBAND" }, { POLLWRNORM, "WRNORM" }, { POLLWRBAND, "WRBAND" },
		{ POLLRDHUP, "RDHUP" },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (v & names[i].bit) {
			if (b[0])
				strcat(b, "|");
			strcat(b, names[i].name);
			v &= ~names[i].bit;
		}
	}
	if (v)
		sprintf(b + strlen(b), "|0x%x", v);
	return b;
}

/* poll1 polls one fd with timeout ms and returns its revents (or -1 on error). */
static int poll1(int fd, short events, int ms)
{
	struct pollfd p = { fd, events, 0 };
	int r = poll(&p, 1, ms);
	if (r < 0)
		return -1;
	return p.revents;
}

#endif

/* early: TCP connections between goxio processes in their early phase (shim/preload/early.c).
 *
 *   early server PORT CONNS      listens on 127.0.0.1:PORT, serves CONNS connections one after
 *                                the other (blocking accept; TCP_NODELAY; echoes every byte until
 *                                the peer's EOF; close), then prints "server conns=CONNS
 *                                calls=C" and exits.
 *   early client PORT CONNS MSGS SIZE [duplex]
 *                                CONNS connections one after the other: connect, TCP_NODELAY,
 *                                MSGS messages of SIZE + (j % 7) bytes (a pattern of the
 *                                connection and message numbers) each written whole and read
 *                                back whole and compared, close. duplex: a second thread reads
 *                                the echoes while the first writes every message. Prints
 *                                "client conns=CONNS msgs=MSGS ok calls=C io=IO kbytes=KB".
 *
 * C: the calls the serving (or, for the client, writing) thread made into goxio's engine
 * during every connection but the first two (goxio_thread_engine_calls of libgoxio.so; -1
 * without it): the first loads the engine, the second's connect teaches the library where the
 * listener is; the others run with both. IO: the read and write system calls of the process
 * during those connections (/proc/self/io syscr + syscw, socket calls included): a connection
 * that moved to shared-memory rings makes few, plus a wake byte each way for each sleep of a
 * peer. KB: the bytes those connections carried through the kernel, both ways (TCP_INFO's
 * bytes acked and received, read before close): with rings, the bytes before the switch and
 * the wake bytes. CONNS is at least 3. Any failure prints "error ..." and
 * exits with status 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
/* linux/tcp.h, not netinet/tcp.h: glibc's struct tcp_info stops before tcpi_bytes_acked. */
#include <linux/tcp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "progs.h"


static long io_calls(void) {
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	long n = 0, v;
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "syscr: %ld", &v) == 1 || sscanf(line, "syscw: %ld", &v) == 1)
			n += v;
	fclose(f);
	return n;
}

/* kernel_bytes: the bytes the kernel's connection carried both ways (TCP_INFO: acked and
 * received), data and goxio's wake bytes alike. */
static long kernel_bytes(int fd) {
	struct tcp_info ti;
	socklen_t n = sizeof ti;
	memset(&ti, 0, sizeof ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &n) != 0 ||
	    n < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
		die("getsockopt TCP_INFO");
	return (long)(ti.tcpi_bytes_acked + ti.tcpi_bytes_received);
}

static void write_all(int fd, const char *b, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		b += w;
		n -= (size_t)w;
	}
}

static void read_all(int fd, char *b, size_t n) {
	while (n > 0) {
		ssize_t r = read(fd, b, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die("read");
		if (r == 0) {
			errno = EPIPE;
			die("read: early EOF");
		}
		b += r;
		n -= (size_t)r;
	}
}

static void server(int port, int conns) {
	struct sockaddr_in a = lo(port);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 128) != 0)
		die("listen");
	long c0 = 0;
	for (int i = 0; i < conns; i++) {
		if (i == 2)
			c0 = calls();
		int c = accept(l, NULL, NULL);
		if (c < 0)
			die("accept");
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		char b[65536];
		for (;;) {
			ssize_t r = read(c, b, sizeof b);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				die("server read");
			if (r == 0)
				break;
			write_all(c, b, (size_t)r);
		}
		if (close(c) != 0)
			die("close");
	}
	long c1 = calls();
	printf("server conns=%d calls=%ld\n", conns, c0 < 0 ? -1 : c1 - c0);
}

static size_t msg_len(int size, int j) { return (size_t)size + (size_t)(j % 7); }

static void fill(char *b, size_t n, int conn, int j) {
	for (size_t k = 0; k < n; k++)
		b[k] = (char)(conn * 31 + j * 7 + (int)k);
}

struct reader {
	int fd, conn, msgs, size;
};

static void check(int fd, int conn, int j, int size) {
	static __thread char want[1 << 17], got[1 << 17];
	size_t n = msg_len(size, j);
	fill(want, n, conn, j);
	read_all(fd, got, n);
	if (memcmp(want, got, n) != 0) {
		printf("error connection %d message %d: echo differs\n", conn, j);
		exit(1);
	}
}

static void *read_echoes(void *arg) {
	struct reader *r = arg;
	for (int j = 0; j < r->msgs; j++)
		check(r->fd, r->conn, j, r->size);
	return NULL;
}

static void client(int port, int conns, int msgs, int size, int duplex) {
	struct sockaddr_in a = lo(port);
	static char b[1 << 17];
	long c0 = 0, io0 = 0, kbytes = 0;
	for (int i = 0; i < conns; i++) {
		if (i == 2)
			c0 = calls(), io0 = io_calls();
		int one = 1, c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
			die("connect");
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		pthread_t t;
		struct reader r = {c, i, msgs, size};
		if (duplex && pthread_create(&t, NULL, read_echoes, &r) != 0)
			die("pthread_create");
		for (int j = 0; j < msgs; j++) {
			size_t n = msg_len(size, j);
			fill(b, n, i, j);
			write_all(c, b, n);
			if (!duplex)
				check(c, i, j, size);
		}
		if (duplex)
			pthread_join(t, NULL);
		if (shutdown(c, SHUT_WR) != 0)
			die("shutdown");
		char end;
		if (read(c, &end, 1) != 0)
			die("read: no EOF after the echoes");
		if (i >= 2)
			kbytes += kernel_bytes(c);
		if (close(c) != 0)
			die("close");
	}
	long c1 = calls(), io1 = io_calls();
	printf("client conns=%d msgs=%d ok calls=%ld io=%ld kbytes=%ld\n", conns, msgs, c0 < 0 ? -1 : c1 - c0, io1 - io0,
	       kbytes);
}

int main(int argc, char **argv) {
	progs_init();
	if (argc >= 4 && atoi(argv[3]) < 3) {
		fprintf(stderr, "early: CONNS must be at least 3\n");
		return 2;
	}
	if (argc == 4 && strcmp(argv[1], "server") == 0) {
		server(atoi(argv[2]), atoi(argv[3]));
		return 0;
	}
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "client") == 0) {
		client(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), argc == 7);
		return 0;
	}
	fprintf(stderr, "usage: early server PORT CONNS | early client PORT CONNS MSGS SIZE [duplex]\n");
	return 2;
}

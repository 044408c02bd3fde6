/* progs.h: what the test programs of tests/shm that count goxio's engine calls share: the
 * calling thread's calls into the engine (goxio_thread_engine_calls of libgoxio.so, looked up
 * by progs_init; -1 without the library), whether the engine is mapped, a fatal error printed as
 * "error WHAT: REASON" with exit status 1, 127.0.0.1:PORT, a socket's local port and a 64-byte
 * datagram's contents. */
#ifndef GOXIO_TESTS_SHM_PROGS_H
#define GOXIO_TESTS_SHM_PROGS_H

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static unsigned long (*engine_calls)(void);

static void progs_init(void) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	engine_calls = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "goxio_thread_engine_calls");
}

static long calls(void) { return engine_calls ? (long)engine_calls() : -1; }

static void die(const char *what) {
	printf("error %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct sockaddr_in lo(int port) {
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* local_port returns socket s's local port. */
__attribute__((unused)) static int local_port(int s) {
	struct sockaddr_in a;
	socklen_t l = sizeof a;
	if (getsockname(s, (struct sockaddr *)&a, &l) != 0)
		die("getsockname");
	return ntohs(a.sin_port);
}

/* rx_pair makes *r, a UDP socket on 127.0.0.1 that the library sees, and *k, one it never sees
 * (made and used through syscall(2)), each bound to a free port. */
__attribute__((unused)) static void rx_pair(int *r, int *k) {
	struct sockaddr_in any = lo(0);
	*r = socket(AF_INET, SOCK_DGRAM, 0);
	if (*r < 0 || bind(*r, (struct sockaddr *)&any, sizeof any) < 0)
		die("socket");
	*k = (int)syscall(SYS_socket, AF_INET, SOCK_DGRAM, 0);
	if (*k < 0 || syscall(SYS_bind, *k, &any, sizeof any) < 0)
		die("kernel socket");
}

/* ksend sends m through the kernel socket k, which the library never sees. */
__attribute__((unused)) static void ksend(int k, const void *m, size_t n, const struct sockaddr_in *to) {
	if (syscall(SYS_sendto, k, m, n, 0, to, sizeof *to) != (long)n)
		die("kernel sendto");
}

/* fill64 writes a 64-byte datagram: a sequence number, a tag (the round, the sender), a pattern of
 * the sequence number. */
__attribute__((unused)) static void fill64(unsigned char *m, int seq, int tag) {
	memcpy(m, &seq, sizeof seq);
	memcpy(m + 4, &tag, sizeof tag);
	for (int i = 8; i < 64; i++)
		m[i] = (unsigned char)(seq * 7 + i);
}

/* recv_kind receives one datagram from r into m (len bytes) with one kind of plain receive: 0
 * recvfrom with an address, 1 recv, 2 read, 3 recvmsg with an address (its msg_flags in
 * *msgflags; 0 for the others). from and *fl get the source where the kind gives it. */
__attribute__((unused)) static long recv_kind(int r, int kind, unsigned char *m, size_t len, struct sockaddr_in *from,
					     socklen_t *fl, int *msgflags) {
	*msgflags = 0;
	if (kind == 0)
		return recvfrom(r, m, len, 0, (struct sockaddr *)from, fl);
	if (kind == 1)
		return recv(r, m, len, 0);
	if (kind == 2)
		return read(r, m, len);
	struct iovec iov = {m, len};
	struct msghdr mh = {.msg_name = from, .msg_namelen = *fl, .msg_iov = &iov, .msg_iovlen = 1};
	long n = recvmsg(r, &mh, 0);
	*fl = mh.msg_namelen;
	*msgflags = mh.msg_flags;
	return n;
}

/* engine_loaded reports whether libgoxio-engine.so is mapped in this process. */
__attribute__((unused)) static int engine_loaded(void) {
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	if (f == NULL)
		die("maps");
	while (!found && fgets(line, sizeof line, f) != NULL)
		found = strstr(line, "libgoxio-engine.so") != NULL;
	fclose(f);
	return found;
}

#endif

/* kread: plain receives on a ring socket whose datagrams all come through the kernel read the
 * kernel socket without entering goxio's engine (shim/preload/box.c, rx_kread), and behave as
 * the kernel's receives do.
 *
 *   kread ROUNDS
 *
 * One process: a UDP socket r on 127.0.0.1 (a ring socket under goxio) and a kernel socket k
 * the library never sees (made and used through syscall(2)). ROUNDS rounds of one 64-byte
 * datagram from k, each received with one kind of plain receive in turn (recvfrom with an
 * address, recv, read, recvmsg with an address); then the kernel's answers to a receive into a
 * bad buffer, recvmsg with a control buffer or a buffer array on a page of its own ("msghdr"), a
 * receive with MSG_TRUNC into a short one, a non-blocking receive with nothing
 * there (MSG_DONTWAIT, then O_NONBLOCK: "nonblock calls" the engine calls of 100 such), and a
 * blocking one again (it waits for its SO_RCVTIMEO); then a goxio sender s (which moves to a ring after its first datagrams) and k
 * interleaved, received in each sender's order. It prints "KIND got=G", "KIND bad=B", "KIND
 * calls=C" (the calls this thread made into the engine during those receives,
 * goxio_thread_engine_calls; -1 without the library), and one line per edge case, the same with
 * and without goxio but for the calls. Any failure: "error ..." and exit status 1. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

int main(int argc, char **argv) {
	progs_init();
	if (argc != 2)
		return 2;
	int rounds = atoi(argv[1]);
	int r, k;
	rx_pair(&r, &k);
	struct sockaddr_in any = lo(0);
	struct sockaddr_in kname;
	socklen_t kl = sizeof kname;
	if (syscall(SYS_getsockname, k, &kname, &kl) < 0)
		die("kernel getsockname");
	struct sockaddr_in to = lo(local_port(r));
	for (int i = 0; i < 4; i++) {
		char b[8];
		ksend(k, "w", 1, &to);
		if (recv(r, b, sizeof b, 0) != 1)
			die("warm-up");
	}
	const char *kinds[4] = {"recvfrom", "recv", "read", "recvmsg"};
	long got[4] = {0}, calls_in[4] = {0}, bad[4] = {0};
	for (int seq = 0; seq < rounds; seq++) {
		int kind = seq % 4;
		unsigned char m[128], want[64];
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		long n;
		fill64(want, seq, 1);
		ksend(k, want, 64, &to);
		memset(&from, 0, sizeof from);
		long before = calls();
		int mf;
		n = recv_kind(r, kind, m, sizeof m, &from, &fl, &mf);
		if (mf != 0)
			bad[kind]++;
		calls_in[kind] += calls() - before;
		if (n < 0)
			die(kinds[kind]);
		got[kind]++;
		if (n != 64 || memcmp(m, want, 64) != 0 ||
		    ((kind == 0 || kind == 3) && (fl != sizeof from || from.sin_port != kname.sin_port)))
			bad[kind]++;
	}
	for (int i = 0; i < 4; i++)
		printf("%s got=%ld\n%s bad=%ld\n%s calls=%ld\n", kinds[i], got[i], kinds[i], bad[i], kinds[i],
		       engine_calls ? calls_in[i] : -1);

	/* recvmsg with a control buffer, and with its buffer array on a page of its own (neither
	 * is one a copy from a box takes): the kernel socket still serves them without the engine. */
	struct iovec *far = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (far == MAP_FAILED)
		die("mmap");
	long cgot = 0, cbad = 0, ccalls = 0;
	for (int i = 0; i < 50; i++) {
		unsigned char d[128], want[64], cbuf[64];
		fill64(want, i, 5);
		ksend(k, want, 64, &to);
		struct iovec iov = {d, sizeof d};
		far[0] = iov;
		struct msghdr mh = {.msg_iov = (i % 2) ? far : &iov, .msg_iovlen = 1};
		if (i % 2 == 0) {
			mh.msg_control = cbuf;
			mh.msg_controllen = sizeof cbuf;
		}
		long before = calls();
		long n = recvmsg(r, &mh, 0);
		ccalls += calls() - before;
		if (n < 0)
			die("recvmsg");
		cgot++;
		if (n != 64 || memcmp(d, want, 64) != 0 || mh.msg_controllen != 0 || mh.msg_flags != 0)
			cbad++;
	}
	printf("msghdr got=%ld\nmsghdr bad=%ld\nmsghdr calls=%ld\n", cgot, cbad, engine_calls ? ccalls : -1);

	/* A bad buffer: EFAULT, and the datagram is gone (the next receive gets the one after). */
	unsigned char m[128];
	fill64(m, 1000, 2);
	ksend(k, m, 64, &to);
	fill64(m, 1001, 2);
	ksend(k, m, 64, &to);
	errno = 0;
	long n = recv(r, (void *)16, 64, 0);
	int e = errno;
	long n2 = recv(r, m, sizeof m, 0);
	int seq2;
	memcpy(&seq2, m, sizeof seq2);
	printf("efault ret=%ld\nefault errno=%d\nefault next=%d\n", n, n < 0 ? e : 0, n2 == 64 ? seq2 : -1);
	/* MSG_TRUNC into 10 bytes: the datagram's length; recvmsg says MSG_TRUNC. */
	ksend(k, m, 64, &to);
	ksend(k, m, 64, &to);
	printf("trunc ret=%ld\n", (long)recv(r, m, 10, MSG_TRUNC));
	struct iovec iov = {m, 10};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	n = recvmsg(r, &mh, 0);
	printf("trunc msgret=%ld\ntrunc msgflags=%d\n", n, (mh.msg_flags & MSG_TRUNC) != 0);
	/* Nothing there: EAGAIN without waiting. */
	errno = 0;
	n = recv(r, m, sizeof m, MSG_DONTWAIT);
	printf("empty ret=%ld\nempty eagain=%d\n", n, n < 0 && errno == EAGAIN);

	/* O_NONBLOCK: an empty socket answers EAGAIN at once, without the engine once a receive
	 * armed it; back to blocking, a receive waits (its SO_RCVTIMEO) again. */
	int fl = fcntl(r, F_GETFL);
	if (fl < 0 || fcntl(r, F_SETFL, fl | O_NONBLOCK) < 0)
		die("O_NONBLOCK");
	for (int i = 0; i < 20; i++) { /* a plain receive asks the engine again within 17 (box.c) */
		ksend(k, m, 64, &to);
		if (recv(r, m, sizeof m, 0) != 64)
			die("non-blocking recv");
	}
	long before = calls(), eagain = 0;
	for (int i = 0; i < 100; i++)
		eagain += recv(r, m, sizeof m, 0) < 0 && errno == EAGAIN;
	printf("nonblock eagain=%ld\nnonblock calls=%ld\n", eagain, engine_calls ? calls() - before : -1);
	if (fcntl(r, F_SETFL, fl) < 0)
		die("blocking again");
	struct timeval tv = {0, 100000};
	if (setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
		die("SO_RCVTIMEO");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	errno = 0;
	n = recv(r, m, sizeof m, 0);
	e = errno;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long waited = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	printf("blocking ret=%ld\nblocking eagain=%d\nblocking waited=%d\n", n, n < 0 && e == EAGAIN, waited >= 80);
	tv.tv_usec = 0;
	setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

	/* A goxio sender joins: its datagrams (through the kernel, then its ring) and k's,
	 * interleaved, each sender's in order. */
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&any, sizeof any) < 0)
		die("sender");
	int next[2] = {0, 0}, disorder = 0, total = 0;
	for (int i = 0; i < 200; i++) {
		unsigned char d[64];
		fill64(d, i, 3);
		if (sendto(s, d, 64, 0, (struct sockaddr *)&to, sizeof to) != 64)
			die("goxio sendto");
		fill64(d, i, 4);
		ksend(k, d, 64, &to);
		for (int j = 0; j < 2; j++) {
			if ((n = recv(r, m, sizeof m, 0)) != 64)
				die("mixed recv");
			int sq, tag;
			memcpy(&sq, m, sizeof sq);
			memcpy(&tag, m + 4, sizeof tag);
			if (tag != 3 && tag != 4)
				die("mixed: a datagram of neither sender");
			if (sq != next[tag - 3]++)
				disorder++;
			total++;
		}
	}
	printf("mixed got=%d\nmixed disorder=%d\n", total, disorder);
	close(s);
	close(r); /* VMA_STATS_FILE gets each socket's counters at its close */
	return 0;
}

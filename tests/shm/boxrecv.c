/* boxrecv: plain receives on a ring socket take the datagrams queued in the socket's box without
 * entering goxio's engine for each (shim/preload/box.c).
 *
 *   boxrecv ROUNDS BURST
 *
 * One process, two UDP sockets on 127.0.0.1 (the receiver with a 4 MiB SO_RCVBUF): after a few
 * datagrams each way (each finds the other's ring), ROUNDS rounds of BURST datagrams of 64 bytes
 * (a sequence number, the round, a pattern), each round received with one kind of plain receive in
 * turn: recvfrom with an address, recv, read, recvmsg with an address. It prints, per kind, "KIND got=G calls=C bad=B":
 * G datagrams received, C the calls this thread made into the engine during those receives
 * (goxio_thread_engine_calls; -1 without the library), B the ones that were not the next expected
 * datagram whole (or, for recvfrom, not from the sender's address). Then a burst taken by one
 * recvfrom and recvmmsg for the rest ("mixed got=G"): the engine serves the datagrams the first
 * queued in the box. Any failure: "error ..." and exit status 1. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "progs.h"

static int bound(void) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = lo(0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0)
		die("socket");
	return s;
}

int main(int argc, char **argv) {
	progs_init();
	if (argc != 3)
		return 2;
	int rounds = atoi(argv[1]), burst = atoi(argv[2]);
	int r = bound(), s = bound(), big = 4 << 20;
	setsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	struct sockaddr_in to = lo(local_port(r)), back = lo(local_port(s));
	for (int i = 0; i < 4; i++) {
		char b[8];
		if (sendto(s, "w", 1, 0, (struct sockaddr *)&to, sizeof to) != 1 || recv(r, b, sizeof b, 0) != 1 ||
		    sendto(r, "w", 1, 0, (struct sockaddr *)&back, sizeof back) != 1 || recv(s, b, sizeof b, 0) != 1)
			die("warm-up");
	}
	const char *kinds[4] = {"recvfrom", "recv", "read", "recvmsg"};
	long got[4] = {0}, calls_in[4] = {0}, bad[4] = {0};
	int seq = 0;
	for (int round = 0; round < rounds; round++) {
		int k = round % 4;
		for (int i = 0; i < burst; i++) {
			unsigned char m[64];
			fill64(m, seq + i, round);
			if (sendto(s, m, sizeof m, 0, (struct sockaddr *)&to, sizeof to) != sizeof m)
				die("sendto");
		}
		long before = calls();
		for (int i = 0; i < burst; i++, seq++) {
			unsigned char m[128], want[64];
			struct sockaddr_in from;
			socklen_t fl = sizeof from;
			long n;
			int mf;
			memset(&from, 0, sizeof from);
			n = recv_kind(r, k, m, sizeof m, &from, &fl, &mf);
			if (n < 0)
				die(kinds[k]);
			fill64(want, seq, round);
			got[k]++;
			if (n != 64 || memcmp(m, want, 64) != 0 ||
			    ((k == 0 || k == 3) && (fl != sizeof from || from.sin_port != back.sin_port)))
				bad[k]++;
		}
		calls_in[k] += calls() - before;
	}
	for (int k = 0; k < 4; k++)
		printf("%s got=%ld\n%s calls=%ld\n%s bad=%ld\n", kinds[k], got[k], kinds[k], engine_calls ? calls_in[k] : -1,
		       kinds[k], bad[k]);
	/* mixed: one recvfrom (which queues the rest of the burst in the box), then recvmmsg, which
	 * the engine serves, the box's datagrams first */
	for (int i = 0; i < burst; i++) {
		unsigned char m[64];
		fill64(m, seq + i, rounds);
		if (sendto(s, m, sizeof m, 0, (struct sockaddr *)&to, sizeof to) != sizeof m)
			die("sendto");
	}
	long mixed = 0;
	unsigned char first[64];
	if (recvfrom(r, first, sizeof first, 0, NULL, NULL) == sizeof first)
		mixed++;
	while (mixed < burst) {
		struct mmsghdr v[16];
		unsigned char bufs[16][64];
		struct iovec iov[16];
		memset(v, 0, sizeof v);
		for (int i = 0; i < 16; i++) {
			iov[i] = (struct iovec){bufs[i], sizeof bufs[i]};
			v[i].msg_hdr.msg_iov = &iov[i];
			v[i].msg_hdr.msg_iovlen = 1;
		}
		int n = recvmmsg(r, v, 16, MSG_WAITFORONE, NULL);
		if (n <= 0)
			die("recvmmsg");
		mixed += n;
	}
	printf("mixed got=%ld\n", mixed);
	close(r); /* VMA_STATS_FILE gets each socket's counters at its close */
	close(s);
	return 0;
}

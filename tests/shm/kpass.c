/* kpass: sockets the kernel serves for good must not enter goxio's engine.
 *
 *   kpass udp PORT N    from one unconnected UDP socket, three phases of 10 + N datagrams of 64
 *                       bytes: to 127.0.0.1:PORT (a receiver without goxio), to a free port
 *                       (nobody), then to that port once a socket of its own (under goxio)
 *                       is bound to it, which reads them back; between the first two, 10 + N
 *                       from a socket connected to 127.0.0.1:PORT with send and write.
 *                       Then "spread": from a new socket, three datagrams to a free port, then one
 *                       to each of min(N, 200) other free ports (a destination new to the
 *                       sender every time, as a server's answers to a socket per request).
 *   kpass udp6 PORT N   the same two phases to [::1]:PORT (a receiver without goxio).
 *   kpass tcp PORT N    connects to 127.0.0.1:PORT (a listener without goxio), writes 10
 *                       messages of 64 bytes, reads the peer's 1-byte answer, writes N more and
 *                       reads its second answer; "tcp loaded=L" as below.
 *   kpass tcpchurn PORT N  3 + N connections to 127.0.0.1:PORT (a listener without goxio), one
 *                       request each: socket, connect (every other one non-blocking: O_NONBLOCK by
 *                       fcntl, poll, SO_ERROR, blocking again), TCP_NODELAY, write 'c', read the
 *                       answer ('C'), close; "tcpchurn calls" counts the engine calls of the last
 *                       N, "tcpchurn ok" the answers right.
 *   kpass udpchurn PORT N  the same with a new UDP socket per request to 127.0.0.1:PORT (an echo
 *                       without goxio): SO_RCVTIMEO, then sendto and recvfrom, or (every other
 *                       one, as glibc's resolver does) connect, send and recv; then close.
 *
 * In udp and udp6, "before loaded=L" says whether the engine (libgoxio-engine.so) was mapped
 * after the sends to destinations without a goxio receiver (a process that only sends to such
 * destinations needs none: shim/preload/lazy_ksend.c); the goxio phase then loads it with a
 * receive. With KPASS_LOAD set in the environment a receive on a UDP socket of its own loads the
 * engine first, so every phase runs with it (the engine's own shortcut: shim/preload/ksend.c).
 *
 * With KPASS_HOLD set in the environment it then prints "hold" and waits for its standard input
 * to close (the test reads its statistics meanwhile).
 *
 * It prints, per phase, "PHASE calls=C" with C the calls the sending thread made into the engine
 * during the phase's last N sends (goxio_thread_engine_calls of libgoxio.so; -1 without it), and
 * "PHASE got=G" for the datagrams it read back where it reads them. Any failure: "error ..." and
 * exit status 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "progs.h"


static void send_n(int s, int port, int n) {
	static struct sockaddr_in to; /* one address, as sockperf keeps it */
	char buf[64];
	memset(buf, 'k', sizeof buf);
	to = lo(port);
	for (int i = 0; i < n; i++)
		if (sendto(s, buf, sizeof buf, 0, (struct sockaddr *)&to, sizeof to) != sizeof buf)
			die("sendto");
}

/* load_engine makes a data call that loads the engine under the library: a receive on a UDP
 * socket (it finds nothing). */
static void load_engine(void) {
	char c;
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	if (u < 0 || recv(u, &c, 1, MSG_DONTWAIT) != -1 || errno != EAGAIN)
		die("load");
	close(u);
}


/* phase sends 10 datagrams, then n more counting the engine calls of the n. */
static void phase(const char *name, int s, int port, int n) {
	send_n(s, port, 10);
	long c0 = calls();
	send_n(s, port, n);
	long c1 = calls();
	printf("%s calls=%ld\n", name, c0 < 0 ? -1 : c1 - c0);
}

/* connected sends 10 datagrams with send and write on a socket connected to 127.0.0.1:port, then
 * n more (alternating) counting the engine calls of the n. */
static void connected(const char *name, int port, int n) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in to = lo(port);
	if (s < 0 || connect(s, (struct sockaddr *)&to, sizeof to) != 0)
		die("connect");
	char buf[64];
	memset(buf, 'c', sizeof buf);
	long c0 = 0;
	for (int i = 0; i < 10 + n; i++) {
		if (i == 10)
			c0 = calls();
		if ((i % 2 ? write(s, buf, sizeof buf) : send(s, buf, sizeof buf, 0)) != sizeof buf)
			die("send");
	}
	long c1 = calls();
	printf("%s calls=%ld\n", name, c0 < 0 ? -1 : c1 - c0);
	close(s);
}

/* drain reads every datagram r holds (waiting up to 500 ms for the first, 100 ms between). */
static int drain(int r) {
	char buf[128];
	int got = 0;
	for (int wait = 500;; wait = 100) {
		struct pollfd p = {.fd = r, .events = POLLIN};
		if (poll(&p, 1, wait) <= 0)
			return got;
		if (recv(r, buf, sizeof buf, MSG_DONTWAIT) == 64)
			got++;
	}
}

static int bound_udp(int port) {
	int r = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = lo(port);
	int big = 4 << 20;
	setsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	if (r < 0 || bind(r, (struct sockaddr *)&a, sizeof a) != 0)
		die("bind");
	return r;
}

/* unused_port is a port no socket has now: one bound to 127.0.0.1 and closed. */
static int unused_port(void) {
	int q = bound_udp(0);
	int p = local_port(q);
	close(q);
	return p;
}

/* spread sends three datagrams to a free port from a new socket, then one to each of min(n, 200)
 * other free ports (none of them the socket's own), counting the engine calls of the latter;
 * "spreadfirst" names the first of them that entered the engine, if one did. */
static void spread(int n) {
	static struct sockaddr_in to;
	int ports[201];
	char buf[64];
	if (n > 200)
		n = 200;
	ports[n] = unused_port();
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	memset(buf, 's', sizeof buf);
	/* three to the first: a late socket's early phase ends at its third data call (early.c) */
	to = lo(ports[n]);
	for (int i = 0; i < 3; i++)
		if (sendto(s, buf, sizeof buf, 0, (struct sockaddr *)&to, sizeof to) != sizeof buf)
			die("sendto");
	/* The other ports only now: the first send bound s to a port of its own, which a later call
	 * publishes (a goxio receiver: a send there rightly enters the engine), and which no bind
	 * can hand out while s holds it. Picked before, one of the 200 was s's port in ~1% of runs. */
	for (int i = 0; i < n; i++)
		ports[i] = unused_port();
	long c0 = calls();
	int first = -1; /* the first send that entered the engine: which destination, for a failure */
	for (int i = 0; i < n; i++) {
		long cb = calls();
		to = lo(ports[i]);
		if (sendto(s, buf, sizeof buf, 0, (struct sockaddr *)&to, sizeof to) != sizeof buf)
			die("sendto");
		if (first < 0 && calls() != cb)
			first = i;
	}
	long c1 = calls();
	printf("spread calls=%ld\n", c0 < 0 ? -1 : c1 - c0);
	if (first >= 0)
		printf("spreadfirst index=%d\nspreadfirst port=%d\n", first, ports[first]);
	close(s);
}

static void udp(int port, int n) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	/* A receiver without goxio: the kernel's for good, no engine after the first sends. */
	phase("plain", s, port, n);
	/* A connected socket to it: its send and write (naming no destination) too. */
	connected("connected", port, n);
	/* A port nobody has: the kernel too (the datagrams are lost, as without goxio). */
	int free_port = unused_port();
	phase("nobody", s, free_port, n);
	printf("before loaded=%d\n", engine_loaded());
	spread(n);
	/* A goxio socket binds that port now and receives (the engine loads if it was not, and
	 * publishes it): the directory changed, every send enters the engine again and reaches it. */
	int r = bound_udp(free_port);
	char c;
	if (recv(r, &c, 1, MSG_DONTWAIT) != -1 || errno != EAGAIN)
		die("recv");
	phase("goxio", s, free_port, n);
	printf("goxio got=%d\n", drain(r));
	close(r);
	close(s);
}

/* udp6 sends 10 + n datagrams to [::1]:port from an unconnected AF_INET6 socket (sendto), then
 * 10 + n from one connected to it (send and write), counting the engine calls of each n. */
static void udp6(int port, int n) {
	struct sockaddr_in6 to = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	char buf[64];
	memset(buf, '6', sizeof buf);
	for (int connected = 0; connected < 2; connected++) {
		int s = socket(AF_INET6, SOCK_DGRAM, 0);
		if (s < 0 || (connected && connect(s, (struct sockaddr *)&to, sizeof to) != 0))
			die("socket6");
		long c0 = 0;
		for (int i = 0; i < 10 + n; i++) {
			if (i == 10)
				c0 = calls();
			ssize_t r = !connected ? sendto(s, buf, sizeof buf, 0, (struct sockaddr *)&to, sizeof to)
				    : i % 2 ? write(s, buf, sizeof buf)
					    : send(s, buf, sizeof buf, 0);
			if (r != sizeof buf)
				die("send6");
		}
		long c1 = calls();
		printf("%s calls=%ld\n", connected ? "connected6" : "plain6", c0 < 0 ? -1 : c1 - c0);
		close(s);
	}
	printf("before6 loaded=%d\n", engine_loaded());
}

static void tcp(int port, int n) {
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = lo(port);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0)
		die("connect");
	char buf[64];
	memset(buf, 't', sizeof buf);
	for (int i = 0; i < 10; i++)
		if (write(s, buf, sizeof buf) != sizeof buf)
			die("write");
	/* The peer's first answer: a connection that never paired is the kernel's for good once its
	 * first kernel byte from the peer arrived (or after the attach grace). */
	char ans;
	if (read(s, &ans, 1) != 1)
		die("read");
	long c0 = calls();
	for (int i = 0; i < n; i++)
		if (write(s, buf, sizeof buf) != sizeof buf)
			die("write");
	if (read(s, &ans, 1) != 1)
		die("read");
	long c1 = calls();
	printf("tcp calls=%ld\n", c0 < 0 ? -1 : c1 - c0);
	printf("tcp loaded=%d\n", engine_loaded());
	close(s);
}

/* churn_round makes one connection and one request; 1 when the answer is right. */
static int churn_round(const struct sockaddr_in *a, int nonblock) {
	int one = 1;
	char b = 'c';
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		die("socket");
	if (nonblock) {
		int fl = fcntl(s, F_GETFL);
		if (fl < 0 || fcntl(s, F_SETFL, fl | O_NONBLOCK) != 0)
			die("fcntl");
		if (connect(s, (const struct sockaddr *)a, sizeof *a) != 0) {
			if (errno != EINPROGRESS)
				die("connect (non-blocking)");
			struct pollfd p = {.fd = s, .events = POLLOUT};
			int err = 0;
			socklen_t el = sizeof err;
			if (poll(&p, 1, 5000) != 1 || getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0)
				die("connect in progress");
		}
		if (fcntl(s, F_SETFL, fl) != 0)
			die("fcntl");
	} else if (connect(s, (const struct sockaddr *)a, sizeof *a) != 0) {
		die("connect");
	}
	if (setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		die("setsockopt");
	if (write(s, &b, 1) != 1 || read(s, &b, 1) != 1)
		die("request");
	if (close(s) != 0)
		die("close");
	return b == 'C';
}

/* udp_round makes one UDP socket and one request; 1 when the echo is right. */
static int udp_round(const struct sockaddr_in *a, int connected) {
	struct timeval tv = {5, 0};
	char b[8] = "request", r[8] = {0};
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	if (setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
		die("setsockopt");
	if (connected) {
		if (connect(s, (const struct sockaddr *)a, sizeof *a) != 0 || send(s, b, sizeof b, 0) != sizeof b)
			die("connect/send");
		if (recv(s, r, sizeof r, 0) != sizeof r)
			die("recv");
	} else {
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		if (sendto(s, b, sizeof b, 0, (const struct sockaddr *)a, sizeof *a) != sizeof b)
			die("sendto");
		if (recvfrom(s, r, sizeof r, 0, (struct sockaddr *)&from, &fl) != sizeof r || from.sin_port != a->sin_port)
			die("recvfrom");
	}
	if (close(s) != 0)
		die("close");
	return memcmp(b, r, sizeof b) == 0;
}

static void udpchurn(int port, int n) {
	static struct sockaddr_in a; /* one address, as a resolver keeps its server's */
	a = lo(port);
	int ok = 0;
	for (int i = 0; i < 4; i++)
		ok += udp_round(&a, i % 2);
	long c0 = calls();
	for (int i = 0; i < n; i++)
		ok += udp_round(&a, i % 2);
	long c1 = calls();
	printf("udpchurn calls=%ld\n", c0 < 0 ? -1 : c1 - c0);
	printf("udpchurn ok=%d\n", ok);
}

static void tcpchurn(int port, int n) {
	struct sockaddr_in a = lo(port);
	int ok = 0;
	for (int i = 0; i < 3; i++)
		ok += churn_round(&a, i % 2);
	long c0 = calls();
	for (int i = 0; i < n; i++)
		ok += churn_round(&a, i % 2);
	long c1 = calls();
	printf("tcpchurn calls=%ld\n", c0 < 0 ? -1 : c1 - c0);
	printf("tcpchurn ok=%d\n", ok);
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: kpass udp|udp6|tcp PORT N\n");
		return 2;
	}
	progs_init();
	int port = atoi(argv[2]), n = atoi(argv[3]);
	if (getenv("KPASS_LOAD") != NULL && engine_calls != NULL)
		load_engine();
	if (strcmp(argv[1], "udp") == 0)
		udp(port, n);
	else if (strcmp(argv[1], "udp6") == 0)
		udp6(port, n);
	else if (strcmp(argv[1], "tcpchurn") == 0)
		tcpchurn(port, n);
	else if (strcmp(argv[1], "udpchurn") == 0)
		udpchurn(port, n);
	else
		tcp(port, n);
	if (getenv("KPASS_HOLD") != NULL) {
		char b[64];
		printf("hold\n");
		while (read(0, b, sizeof b) > 0)
			;
	}
	return 0;
}

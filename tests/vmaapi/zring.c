/*
 * zring.c: recvfrom_zcopy on the shared-memory transport is zero-copy.
 *
 * A receiver (this program) and senders (this program again, exec'd with "send": a process of its
 * own, which loads its own engine) exchange UDP datagrams over 127.0.0.1. argv[1] says what the
 * receiver must find:
 *   none     no library: no API, datagrams copied by recvfrom
 *   ring     the shared-memory transport: recvfrom_zcopy's iovec points into the sender's ring, a
 *            /dev/shm mapping of this process, and aliases it (a byte written through the ring's
 *            file shows through the iovec: no copy); held records survive the sender's exit and
 *            the ring goes (unmapped, unlinked) with the last free; records held fill the ring
 *            until the sender gets EAGAIN (VMA_TX_NONBLOCKED_EAGAINS=1), and delivery resumes,
 *            exact and in order, after free_packets
 *   copy     the kernel transport: recvfrom_zcopy copies into a record outside shared memory
 *   cleared  GOXIO_EXTRA_API=0: no member, the program's fallback (recvfrom) path
 * With "wait" as argv[2] (ring only), the receiver says "HOLDING n" on stderr while it holds n
 * records and waits for a byte on stdin (the test reads the statistics then).
 * stdout is the same in every mode; any broken expectation exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../shim/goxio_extra.h"

#define NDGRAM 6
#define BURST_LEN 1000
#define MAX_BURST 200000
#define MORE 10

static const char *mode;

#include "check.h"
#include "zpkt.h"

static int is(const char *m) { return strcmp(mode, m) == 0; }

static size_t dgram_len(int k) { return (size_t)(k * 1777) % 9000 + 1; }

/* ---- the sender: "send few|burst port ctl go" ---- */

static void put(int fd, const void *b, size_t n) {
	if (write(fd, b, n) != (ssize_t)n)
		_exit(3);
}

static void get(int fd, void *b, size_t n) {
	if (read(fd, b, n) != (ssize_t)n)
		_exit(4);
}

static int sender(char **argv) {
	int ctl = atoi(argv[3]), go = atoi(argv[4]), port;
	get(go, &port, sizeof port);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	static unsigned char out[9001];
	if (strcmp(argv[2], "few") == 0) {
		/* NDGRAM datagrams, then wait for the receiver, close the socket and exit. Connected,
		 * every datagram goes through the ring from the first (an unconnected socket's first
		 * sendto calls go through the kernel: its early phase, shim/preload/early.c). */
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		if (connect(s, (struct sockaddr *)&a, sizeof a) != 0)
			_exit(2);
		for (int k = 0; k < NDGRAM; k++) {
			fill(out, dgram_len(k), (uint32_t)k);
			if (send(s, out, dgram_len(k), 0) != (ssize_t)dgram_len(k))
				_exit(2);
		}
		put(ctl, "r", 1);
		char c;
		get(go, &c, 1);
		close(s);
		_exit(0);
	}
	/* burst: send until the receiver's ring refuses (EAGAIN), say how many went, wait, then send
	 * the refused one and MORE after it, retrying while refused */
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (connect(s, (struct sockaddr *)&a, sizeof a) != 0)
		_exit(2);
	uint32_t seq = 0;
	for (; seq < MAX_BURST; seq++) {
		fill(out, BURST_LEN, seq);
		if (send(s, out, BURST_LEN, 0) != BURST_LEN)
			break;
	}
	int eagain = seq < MAX_BURST && (errno == EAGAIN || errno == EWOULDBLOCK);
	put(ctl, &seq, sizeof seq);
	put(ctl, &eagain, sizeof eagain);
	char c;
	get(go, &c, 1);
	uint32_t end = seq + MORE;
	for (int tries = 0; seq < end && tries < 5000;) {
		fill(out, BURST_LEN, seq);
		if (send(s, out, BURST_LEN, 0) == BURST_LEN) {
			seq++;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			tries++;
			usleep(1000);
		} else {
			_exit(5);
		}
	}
	put(ctl, &seq, sizeof seq);
	close(s);
	_exit(seq == end ? 0 : 6);
}

/* spawn runs this program as a sender of kind: its pid; *ctl reads what it says, *go tells it the
 * port, then to go on. It forks before the receiving socket exists: a fork hands the process's
 * ring sockets back to the kernel (the child shares them). */
static pid_t spawn(const char *kind, int *ctl, int *go) {
	int c[2], g[2];
	CHECK(pipe(c) == 0 && pipe(g) == 0, "pipe");
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(c[0]);
		close(g[1]);
		char cs[16], gs[16];
		snprintf(cs, sizeof cs, "%d", c[1]);
		snprintf(gs, sizeof gs, "%d", g[0]);
		execl("/proc/self/exe", "zring", "send", kind, cs, gs, (char *)NULL);
		_exit(7);
	}
	close(c[1]);
	close(g[0]);
	*ctl = c[0];
	*go = g[1];
	return pid;
}

static void reap(pid_t pid) {
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "sender exit status %#x", st);
}

/* ---- where a held record lies ---- */

/* mapped reports whether path is mapped in this process. */
static int mapped(const char *path) {
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL, "open maps");
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof line, f) != NULL)
		found = strstr(line, path) != NULL;
	fclose(f);
	return found;
}

static int bound_socket(int *port) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &al) == 0, "bind");
	*port = ntohs(a.sin_port);
	/* a first receive: under the library it loads the engine, which then serves the socket
	 * (datagrams sent to a socket made before that go through the kernel) */
	char b;
	errno = 0;
	CHECK(recv(s, &b, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN, "a datagram from nowhere");
	return s;
}

/* exact: NDGRAM datagrams held at once, where they lie, intact after their sender exited; the
 * ring goes with the last free. */
static void exact(void) {
	int port, ctl, go;
	pid_t pid = spawn("few", &ctl, &go);
	int rx = bound_socket(&port);
	CHECK(write(go, &port, sizeof port) == sizeof port, "port");
	char c;
	CHECK(read(ctl, &c, 1) == 1, "sender ready");
	struct rec r[NDGRAM] = {0};
	char ring[1024] = "";
	for (int k = 0; k < NDGRAM; k++) {
		struct sockaddr_in from;
		CHECK(receive(rx, &r[k], 0, &from) == (ssize_t)dgram_len(k), "datagram %d length", k);
		CHECK(from.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && from.sin_port != 0, "source address");
		CHECK(intact(r[k].data, r[k].len, (uint32_t)k), "datagram %d bytes", k);
		char path[1024];
		unsigned long lo, hi;
		off_t off;
		int m = mapping(r[k].data, path, sizeof path, &lo, &hi, &off);
		int shm = m && strncmp(path, "/dev/shm/goxio.", 15) == 0;
		if (is("ring")) {
			CHECK(shm, "datagram %d at %p is not in a /dev/shm ring mapping (%s)", k, (void *)r[k].data, m ? path : "unmapped");
			CHECK(k == 0 || strcmp(path, ring) == 0, "one sender, two rings: %s and %s", ring, path);
			snprintf(ring, sizeof ring, "%s", path);
			aliases(r[k].data, r[k].len, path, off);
		} else {
			CHECK(!shm, "datagram %d copied into shared memory %s", k, path);
		}
	}
	for (int k = 0; k < NDGRAM; k++)
		for (int j = 0; j < k; j++)
			CHECK(r[k].data != r[j].data && (!zc || r[k].id != r[j].id), "two datagrams in one record");
	/* the sender closes its socket and exits; the receiver's next receives look for senders gone */
	CHECK(write(go, "g", 1) == 1, "go");
	reap(pid);
	for (int i = 0; i < 150; i++) {
		char b[16];
		errno = 0;
		CHECK(recv(rx, b, sizeof b, MSG_DONTWAIT) == -1 && errno == EAGAIN, "a datagram from nowhere");
		usleep(2000);
	}
	for (int k = 0; k < NDGRAM; k++) {
		CHECK(intact(r[k].data, r[k].len, (uint32_t)k), "datagram %d after its sender exited", k);
		printf("datagram %d: %zu bytes ok\n", k, r[k].len);
	}
	if (is("ring"))
		CHECK(mapped(ring), "the ring %s went while records were held", ring);
	if (zc) {
		/* frees: another socket's, a double one, a foreign pointer, the same packet twice */
		int other_port;
		int other = bound_socket(&other_port);
		errno = 0;
		CHECK(free_one(other, r[0].id) == -1 && errno == ENOENT, "a packet freed through another socket");
		CHECK(free_one(rx, r[0].id) == 0, "free_packets");
		errno = 0;
		CHECK(free_one(rx, r[0].id) == -1 && errno == ENOENT, "a double free");
		int local;
		errno = 0;
		CHECK(free_one(rx, &local) == -1 && errno == ENOENT, "a foreign pointer");
		struct vma_packet_t two[2] = {{.packet_id = r[1].id}, {.packet_id = r[1].id}};
		errno = 0;
		CHECK(api->free_packets(rx, two, 2) == -1 && errno == ENOENT, "one packet twice in a call");
		if (is("ring"))
			CHECK(mapped(ring), "the ring %s went while records were held", ring);
		/* the rest in one call, out of order */
		struct vma_packet_t rest[NDGRAM - 1];
		for (int k = 1; k < NDGRAM; k++)
			rest[NDGRAM - 1 - k].packet_id = r[k].id;
		CHECK(api->free_packets(rx, rest, NDGRAM - 1) == 0, "free the rest");
		/* nothing else arrived */
		unsigned char pbuf[128];
		int f = MSG_DONTWAIT;
		errno = 0;
		CHECK(api->recvfrom_zcopy(rx, pbuf, sizeof pbuf, &f, NULL, NULL) == -1 && errno == EAGAIN, "a datagram from nowhere");
		struct stat st;
		if (is("ring"))
			CHECK(!mapped(ring) && stat(ring, &st) == -1 && errno == ENOENT, "the ring %s stays after its last free", ring);
		close(other);
	}
	printf("exact: %d datagrams, held until freed\n", NDGRAM);
	close(rx);
	close(ctl);
	close(go);
}

/* backpressure (ring only): every record held, the sender's ring fills and it gets EAGAIN; after
 * the frees, the datagrams it sends then arrive, exact and in order. */
static void backpressure(int wait) {
	int port, ctl, go;
	pid_t pid = spawn("burst", &ctl, &go);
	int rx = bound_socket(&port);
	CHECK(write(go, &port, sizeof port) == sizeof port, "port");
	static struct rec r[MAX_BURST + MORE];
	uint32_t got = 0, sent = 0;
	int eagain = 0, told = 0;
	for (;;) {
		struct sockaddr_in from;
		ssize_t n = receive(rx, &r[got], MSG_DONTWAIT, &from);
		if (n >= 0) {
			CHECK(n == BURST_LEN && intact(r[got].data, r[got].len, got), "burst datagram %u", got);
			got++;
			continue;
		}
		CHECK(errno == EAGAIN, "receive");
		if (told && got == sent)
			break;
		struct pollfd p[2] = {{.fd = rx, .events = POLLIN}, {.fd = ctl, .events = POLLIN}};
		CHECK(poll(p, told ? 1 : 2, 10000) > 0, "nothing from the sender for 10 s (%u received)", got);
		if (!told && (p[1].revents & POLLIN)) {
			CHECK(read(ctl, &sent, sizeof sent) == sizeof sent && read(ctl, &eagain, sizeof eagain) == sizeof eagain,
			      "sender's count");
			told = 1;
		}
	}
	CHECK(eagain && sent == got && got > 2, "held records did not stop the sender: %u sent, %u held, EAGAIN %d", sent, got, eagain);
	if (wait) {
		fprintf(stderr, "HOLDING %u\n", got);
		char c;
		CHECK(read(0, &c, 1) >= 0, "stdin");
	}
	/* free the newest half first: the ring stays full; then the oldest half */
	for (uint32_t k = got / 2; k < got; k++)
		CHECK(free_one(rx, r[k].id) == 0, "free %u", k);
	for (uint32_t k = 0; k < got / 2; k++)
		CHECK(free_one(rx, r[k].id) == 0, "free %u", k);
	CHECK(write(go, "g", 1) == 1, "go");
	uint32_t end;
	CHECK(read(ctl, &end, sizeof end) == sizeof end && end == sent + MORE, "sender's end");
	for (uint32_t k = sent; k < end; k++) {
		struct sockaddr_in from;
		CHECK(receive(rx, &r[k], 0, &from) == BURST_LEN && intact(r[k].data, r[k].len, k), "datagram %u after the frees", k);
		CHECK(free_one(rx, r[k].id) == 0, "free %u", k);
	}
	reap(pid);
	fprintf(stderr, "back-pressure: %u records held stopped the sender, %d more after the frees\n", got, MORE);
	close(rx);
	close(ctl);
	close(go);
}

int main(int argc, char **argv) {
	if (argc > 4 && strcmp(argv[1], "send") == 0)
		return sender(argv);
	mode = argc > 1 ? argv[1] : "none";
	setvbuf(stdout, NULL, _IOLBF, 0);
	api = goxio_get_api();
	uint64_t bits = VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS;
	zc = api != NULL && (api->vma_extra_supported_mask & bits) == bits;
	CHECK(zc == (is("ring") || is("copy")), "zero-copy members offered: %d in mode %s", zc, mode);
	exact();
	if (is("ring"))
		backpressure(argc > 2 && strcmp(argv[2], "wait") == 0);
	printf("done\n");
	return 0;
}

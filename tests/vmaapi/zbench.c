/*
 * zbench.c: UDP receive throughput, zero-copy (recvfrom_zcopy + free_packets) against copying
 * (recvfrom).
 *
 *	zbench zcopy|zcopy16|copy SIZE SECONDS [head] [drain]
 *
 * zcopy frees each datagram before it receives the next; zcopy16 holds 16 (at most 64 KB) and frees
 * them in one free_packets call (a program that holds more than its ring holds, 256 KB by default,
 * gets nothing more until it frees: the sender's datagrams are dropped meanwhile).
 * The receiver (this process) spawns a sender (this program again, exec'd: its own process and
 * engine) that sends SIZE-byte datagrams to it over 127.0.0.1, and receives for SECONDS after the
 * first datagram. Every datagram is read whole by the receiver (a sum of its 64-bit words, as a
 * handler would read it), and its sequence number must grow (datagrams may be dropped, never
 * reordered or corrupted); with "head" only its first 64 bytes are read (a handler that looks at a
 * header and forwards or drops).
 *
 * Streaming (the default): the sender sends as fast as it can, so the rate is the slower side's:
 * a receive faster than the sender's send waits for each datagram. With "drain" the rate is the
 * receive's own: the sender sends a burst (BURST_BYTES of datagrams, at most 4096) while the
 * receiver does not read, says so, and the receiver times how long it takes to take the burst
 * (non-blocking receives until EAGAIN); the rate is the datagrams received over those times, the
 * sender's work and the waits not counted. It prints one line:
 *
 *	<mode> size <SIZE> msgs/s <rate> MB/s <rate> cpu_ns/msg <c> received <n> sum <s>
 *
 * cpu_ns/msg is the receiving process's CPU time (all its threads) per datagram: what a receive
 * costs, less sensitive than the rate to other load on the machine (drain: the CPU time of the
 * drains only).
 *
 * zcopy needs the extra API (exit 2 without it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../shim/goxio_extra.h"

#include "check.h"

static double clock_of(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void) { return clock_of(CLOCK_MONOTONIC); }

/* BURST_BYTES bounds a drain burst: a quarter of the 4 MB the receiver asks for SO_RCVBUF and of the
 * ring its sender makes (VMA_RX_BYTES_MIN, set by main), whatever the per-datagram overhead. */
#define BURST_BYTES (1 << 20)
#define BURST_MAX 4096

static int burst_of(int size) {
	int n = BURST_BYTES / (size + 128);
	return n < BURST_MAX ? n : BURST_MAX;
}

/* sender sends SIZE-byte datagrams to the port read from portfd: as fast as it can, or with ctl
 * (drain) a burst per byte read from ctl, answered by a byte on done. */
static int sender(int size, int portfd, int ctl, int done) {
	int port;
	if (read(portfd, &port, sizeof port) != sizeof port)
		return 3;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	static unsigned char out[65536];
	for (int i = 0; i < size; i++)
		out[i] = (unsigned char)(i * 7);
	uint64_t seq = 1;
	for (;;) {
		char c = 0;
		if (ctl >= 0 && read(ctl, &c, 1) != 1)
			return 0;
		for (int k = 0; ctl < 0 || k < burst_of(size); k++, seq++) {
			memcpy(out, &seq, sizeof seq);
			if (sendto(s, out, (size_t)size, 0, (struct sockaddr *)&a, sizeof a) < 0 && errno != EAGAIN && errno != ENOBUFS)
				return 4;
		}
		if (write(done, &c, 1) != 1)
			return 5;
	}
}

static uint64_t sum(const unsigned char *p, size_t n) {
	uint64_t s = 0, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		s += w;
	}
	for (; i < n; i++)
		s += p[i];
	return s;
}

static double cpu_now(void) { return clock_of(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv) {
	if (argc == 6 && strcmp(argv[1], "send") == 0)
		return sender(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	CHECK(argc >= 4 && argc <= 6, "usage: zbench zcopy|zcopy16|copy SIZE SECONDS [head] [drain]");
	int zc = strncmp(argv[1], "zcopy", 5) == 0, size = atoi(argv[2]);
	int batch = strcmp(argv[1], "zcopy16") == 0 ? 16 : 1;
	size_t touch = (size_t)size;
	int drain = 0;
	for (int i = 4; i < argc; i++) {
		if (strcmp(argv[i], "head") == 0)
			touch = 64;
		else if (strcmp(argv[i], "drain") == 0)
			drain = 1;
		else
			CHECK(0, "unknown word %s", argv[i]);
	}
	double secs = atof(argv[3]);
	CHECK(size >= 8 && size <= 65000 && secs > 0, "size 8..65000, seconds > 0");
	struct vma_api_t *api = goxio_get_api();
	if (zc && (api == NULL || !(api->vma_extra_supported_mask & VMA_EXTRA_API_RECVFROM_ZCOPY))) {
		fprintf(stderr, "no recvfrom_zcopy\n");
		return 2;
	}
	int p[2], go[2] = {-1, -1}, done[2] = {-1, -1};
	CHECK(pipe(p) == 0 && (!drain || (pipe(go) == 0 && pipe(done) == 0)), "pipe");
	pid_t pid = fork(); /* before the socket: a fork hands ring sockets back to the kernel */
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		close(p[1]);
		char sz[16], fd[16], g[16], d[16];
		snprintf(sz, sizeof sz, "%d", size);
		snprintf(fd, sizeof fd, "%d", p[0]);
		snprintf(g, sizeof g, "%d", go[0]);
		snprintf(d, sizeof d, "%d", done[1]);
		/* a ring that holds a whole burst (the default holds 256 KB) */
		setenv("VMA_RX_BYTES_MIN", "4194304", 0);
		execl("/proc/self/exe", "zbench", "send", sz, fd, g, d, (char *)NULL);
		_exit(7);
	}
	close(p[0]);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	int rcv = 4 << 20;
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
	CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &al) == 0, "bind");
	char b;
	recv(s, &b, 1, MSG_DONTWAIT); /* under the library: the engine serves the socket from now on */
	int port = ntohs(a.sin_port);
	CHECK(write(p[1], &port, sizeof port) == sizeof port, "port");
	static unsigned char buf[65536];
	struct vma_packet_t held[16];
	int nheld = 0;
	size_t heldb = 0;
	uint64_t n = 0, total = 0, last = 0;
	double start = 0, end = 0, cpu0 = 0, busy = 0, cpu = 0;
	int flags0 = drain ? MSG_DONTWAIT : 0;
	for (int more = 1; more;) {
		double t0 = 0, c0 = 0;
		if (drain) {
			CHECK(write(go[1], "g", 1) == 1 && read(done[0], &b, 1) == 1, "burst");
			t0 = now();
			c0 = cpu_now();
		}
		for (;;) {
			const unsigned char *data = buf;
			ssize_t got;
			void *id = NULL;
			if (zc) {
				unsigned char pbuf[128];
				int flags = flags0;
				got = api->recvfrom_zcopy(s, pbuf, sizeof pbuf, &flags, NULL, NULL);
				if (got > 0 && (flags & MSG_VMA_ZCOPY)) {
					struct vma_packets_t *pk = (struct vma_packets_t *)pbuf;
					id = pk->pkts[0].packet_id;
					data = pk->pkts[0].iov[0].iov_base;
				} else if (got > 0) {
					data = pbuf; /* copied: cannot happen with a 128-byte buffer */
				}
			} else {
				got = recv(s, buf, sizeof buf, flags0);
			}
			if (drain && got < 0 && errno == EAGAIN)
				break;
			CHECK(got == size, "received %zd bytes, want %d", got, size);
			uint64_t seq;
			memcpy(&seq, data, sizeof seq);
			CHECK(seq > last, "sequence %llu after %llu", (unsigned long long)seq, (unsigned long long)last);
			last = seq;
			total += sum(data, touch < (size_t)size ? touch : (size_t)size);
			if (id != NULL) {
				held[nheld++] = (struct vma_packet_t){.packet_id = id};
				heldb += (size_t)size;
				if (nheld == batch || heldb >= 65536) {
					CHECK(api->free_packets(s, held, (size_t)nheld) == 0, "free_packets");
					nheld = 0;
					heldb = 0;
				}
			}
			if (drain) {
				n++;
				continue;
			}
			if (n++ == 0) {
				start = now();
				end = start + secs;
				cpu0 = cpu_now();
			} else if ((n & 255) == 0 && now() >= end) {
				more = 0;
				break;
			}
		}
		if (drain) {
			if (nheld > 0) {
				CHECK(api->free_packets(s, held, (size_t)nheld) == 0, "free_packets");
				nheld = 0;
				heldb = 0;
			}
			busy += now() - t0;
			cpu += cpu_now() - c0;
			if (start == 0)
				start = t0;
			more = now() - start < secs;
		}
	}
	double el = now() - start;
	if (drain) {
		el = busy;
		n++; /* the rate counts n - 1 datagrams: the streaming one starts its clock at the first */
	} else {
		cpu = cpu_now() - cpu0;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK(n > 1, "nothing received");
	printf("%s size %d msgs/s %.0f MB/s %.1f cpu_ns/msg %.0f received %llu sum %llu\n", argv[1], size,
	       (double)(n - 1) / el, (double)(n - 1) * size / el / 1e6, cpu * 1e9 / (double)(n - 1), (unsigned long long)n,
	       (unsigned long long)total);
	return 0;
}

/* shmudp: UDP traffic generator and checker for the shared-memory transport tests
 * (tests/shm_test.go).
 *
 * Every datagram carries a header (magic, sender id, sequence number, total length, the sender's
 * port, the sender's count) and a payload that is a function of (sender, seq, offset), followed by
 * its FNV-1a checksum in the header: the receiver recomputes both, so a damaged, truncated, mixed
 * or misattributed datagram is counted as bad.
 *
 * Modes (all print line-buffered stdout; lines the test waits for start with a fixed word):
 *
 *   rx   [-p port] [-n total] [-i idle_ms] [-a window] [-g] [-m group] [-b rcvbuf] [-6 -I ifname
 *        [-S source]] [-W]
 *        Binds 127.0.0.1:port (or INADDR_ANY:port joined to group on 127.0.0.1 with -m; -b sets
 *        SO_RCVBUF first; -6: an AF_INET6 dual-stack socket bound to [::]:port, joined to the
 *        IPv6 group (IPV6_JOIN_GROUP) or the IPv4 one (IP_ADD_MEMBERSHIP) on interface ifname;
 *        datagrams must come from an AF_INET6 source, -S its address), prints
 *        "ready PORT FD", receives until total datagrams (0: no limit), idle_ms without any, or
 *        "exit" on stdin. -a: acknowledges seq to the datagram's source when seq % window ==
 *        window-1 or seq is the sender's last. -g: reads nothing before "go" on stdin, then
 *        drains with MSG_DONTWAIT until EAGAIN. "report" on stdin prints the per-sender lines.
 *        At the end prints "sender ID got N first F last L gaps G" lines and
 *        "summary total T bad B reorder R badsrc S gaps G idle I"; -W then waits for "exit".
 *   tx   -p port [-d addr] -s id [-n count] [-a window [-A acks]] [-u pause_us] [-T duration_ms]
 *        [-c] [-N] [-l len] [-m [-U]] [-6 -I ifname] [-W]
 *        (-6: an AF_INET6 socket, addr an IPv6 or IPv4-mapped one, -m on interface ifname
 *        (IPV6_MULTICAST_IF, or for a mapped group IP_MULTICAST_IF), bound to [::]:0.)
 *        Sends count datagrams (0: until duration_ms) to addr:port (127.0.0.1), from a socket
 *        bound to 127.0.0.1:0 (-c: connect()ed instead, sending with send(); -m: multicast
 *        sender on 127.0.0.1; -U: not bound, as a feed's publisher: its options are set before
 *        a first datagram, to addr:port+1, binds it; -M: sends with sendmmsg, 4 datagrams a call, the window a
 *        multiple of 4). -a: waits for the ack of each window's last datagram (5 s), from
 *        each of -A receivers (multicast; default 1).
 *        -N: non-blocking socket; EAGAIN is counted, the datagram skipped. "exit" on stdin ends
 *        the sending early. Prints
 *        "ready PORT FD", then "sent OK eagain E"; -W then waits for "exit".
 *   self -n count [-W]
 *        Two sockets of one process: A sends count datagrams to B, B checks each and answers to
 *        its source, A checks the answer. Prints "ready FDA FDB", then "self ok N bad B".
 *   mself -n count [-m group] [-W]
 *        Multicast inside one process: two member sockets each get every datagram of a third
 *        exactly once. Prints "ready FDB FDC", then "mself ok N bad B extra E".
 *   early -n count
 *        A receive blocked before its socket has a port gets the datagrams sent once it has one.
 *        Prints "ready FD 0", then "early got N bad B".
 *   forkspill -n count
 *        Datagrams queued in a socket at a fork are received once, by the child or the parent.
 *        Prints "ready FDR FDS", "child got N bad B", "parent got N bad B extra E".
 *   noop Opens and binds one UDP socket, polls it once (under goxio the engine loads at a
 *        process's first wait or data call on an inet socket, and sweeps), closes it, exits.
 *
 * A receiver polls its socket once (timeout 0) before it prints "ready": under goxio that loads the
 * engine, which publishes the socket, before the test starts any sender.
 *
 * Exit codes: 0 done (the test judges the counts), 2 a system call failed, 3 an ack timed out.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x474f5849u
#define ACKMAGIC 0x41434b21u
#define HDR 32
#define MAXDG 2048
#define MAXSENDERS 64

struct hdr {
	uint32_t magic, sender, seq, len;
	uint16_t port, pad;
	uint32_t count;
	uint64_t sum;
};

static void die(const char *what)
{
	printf("FATAL %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(2);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint8_t pat(uint32_t sender, uint32_t seq, uint32_t i)
{
	return (uint8_t)(sender * 131u + seq * 7u + i * 13u + (i >> 8));
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}

static size_t dglen(uint32_t sender, uint32_t seq, int fixed)
{
	if (fixed > 0)
		return fixed < HDR ? HDR : (size_t)fixed;
	return HDR + (seq * 7919u + sender * 31u) % 1201u;
}

static size_t build(uint8_t *b, uint32_t sender, uint32_t seq, uint32_t count, uint16_t port, int fixed)
{
	size_t n = dglen(sender, seq, fixed);
	struct hdr h = {.magic = MAGIC, .sender = sender, .seq = seq, .len = (uint32_t)n, .port = port,
			.count = count};
	for (size_t i = HDR; i < n; i++)
		b[i] = pat(sender, seq, (uint32_t)i);
	h.sum = fnv(b + HDR, n - HDR);
	memcpy(b, &h, sizeof h);
	return n;
}

/* check returns 1 when b[0..n) is an intact datagram, filling h. */
static int check(const uint8_t *b, ssize_t n, struct hdr *h)
{
	if (n < HDR)
		return 0;
	memcpy(h, b, sizeof *h);
	if (h->magic != MAGIC || h->len != (uint32_t)n || h->sender >= MAXSENDERS)
		return 0;
	for (ssize_t i = HDR; i < n; i++)
		if (b[i] != pat(h->sender, h->seq, (uint32_t)i))
			return 0;
	return h->sum == fnv(b + HDR, (size_t)n - HDR);
}

static void set_rcvtimeo(int fd, int ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
		die("SO_RCVTIMEO");
}

/* poll_once looks at fd without waiting: the first wait on an inet socket, which under goxio
 * loads the engine (it adopts and publishes the sockets made before). */
static void poll_once(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 0) < 0)
		die("poll");
}

static int local_port(int fd)
{
	struct sockaddr_in6 a;
	socklen_t al = sizeof a;
	if (getsockname(fd, (struct sockaddr *)&a, &al) < 0)
		die("getsockname");
	return ntohs(a.sin6_port);
}

/* ---- receiver ---- */

struct sender_stat {
	long got, gaps, reorder;
	long first, last;
	uint32_t next;
};

static struct sender_stat st[MAXSENDERS];
static long total, bad, badsrc;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop_flag, go_flag;

static void report(void)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXSENDERS; i++)
		if (st[i].got)
			printf("sender %d got %ld first %ld last %ld gaps %ld reorder %ld\n", i, st[i].got,
			       st[i].first, st[i].last, st[i].gaps, st[i].reorder);
	printf("report-end total %ld bad %ld\n", total, bad);
	fflush(stdout);
	pthread_mutex_unlock(&mu);
}

static void *stdin_thread(void *arg)
{
	(void)arg;
	char line[128];
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "go", 2) == 0)
			atomic_store(&go_flag, 1);
		else if (strncmp(line, "report", 6) == 0)
			report();
		else if (strncmp(line, "exit", 4) == 0)
			break;
	}
	atomic_store(&stop_flag, 1);
	atomic_store(&go_flag, 1);
	return NULL;
}

static void wait_exit(void)
{
	while (!atomic_load(&stop_flag))
		usleep(10000);
}

static int rx6_main(int port, long limit, int idle, int window, int gate, const char *group, int rcvbuf,
		    const char *ifname, const char *source, int waitexit);
static int rx_loop(int fd, long limit, int idle, int window, int gate, const struct in6_addr *want6, int waitexit);

static int rx_main(int argc, char **argv)
{
	int port = 0, idle = 5000, window = 0, gate = 0, waitexit = 0, rcvbuf = 0, v6 = 0;
	long limit = 0;
	const char *group = NULL, *ifname = NULL, *source = NULL;
	int o;
	while ((o = getopt(argc, argv, "p:n:i:a:gm:b:6I:S:W")) != -1) {
		switch (o) {
		case 'p': port = atoi(optarg); break;
		case 'n': limit = atol(optarg); break;
		case 'i': idle = atoi(optarg); break;
		case 'a': window = atoi(optarg); break;
		case 'g': gate = 1; break;
		case 'm': group = optarg; break;
		case 'b': rcvbuf = atoi(optarg); break;
		case '6': v6 = 1; break;
		case 'I': ifname = optarg; break;
		case 'S': source = optarg; break;
		case 'W': waitexit = 1; break;
		default: return 2;
		}
	}
	if (v6)
		return rx6_main(port, limit, idle, window, gate, group, rcvbuf, ifname, source, waitexit);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0)
		die("SO_RCVBUF");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	if (group) {
		int one = 1;
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
			die("SO_REUSEADDR");
		a.sin_addr.s_addr = htonl(INADDR_ANY);
	} else {
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind");
	if (group) {
		struct ip_mreq m = {0};
		if (inet_pton(AF_INET, group, &m.imr_multiaddr) != 1)
			die("group address");
		m.imr_interface.s_addr = htonl(INADDR_LOOPBACK);
		if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) < 0)
			die("IP_ADD_MEMBERSHIP");
	}
	return rx_loop(fd, limit, idle, window, gate, NULL, waitexit);
}

/* rx6_main is rx -6: a dual-stack member of an IPv6 or IPv4 group on ifname. */
static int rx6_main(int port, long limit, int idle, int window, int gate, const char *group, int rcvbuf,
		    const char *ifname, const char *source, int waitexit)
{
	unsigned idx = ifname ? if_nametoindex(ifname) : 0;
	if (!group || !idx) {
		printf("FATAL -6 needs -m group and -I ifname\n");
		return 2;
	}
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	int one = 1, zero = 0;
	if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0)
		die("SO_RCVBUF");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero) < 0)
		die("socket options");
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind");
	if (strchr(group, ':')) {
		struct ipv6_mreq m = {.ipv6mr_interface = idx};
		if (inet_pton(AF_INET6, group, &m.ipv6mr_multiaddr) != 1)
			die("group address");
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof m) < 0)
			die("IPV6_JOIN_GROUP");
	} else {
		struct ip_mreqn m = {.imr_ifindex = (int)idx};
		if (inet_pton(AF_INET, group, &m.imr_multiaddr) != 1)
			die("group address");
		if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) < 0)
			die("IP_ADD_MEMBERSHIP");
	}
	struct in6_addr want;
	if (source && inet_pton(AF_INET6, source, &want) != 1)
		die("source address");
	return rx_loop(fd, limit, idle, window, gate, source ? &want : NULL, waitexit);
}

/* rx_loop receives on fd (see rx); want6: the IPv6 source address every datagram must come from
 * (an AF_INET6 socket's), NULL for 127.0.0.1 (an AF_INET socket's). */
static int rx_loop(int fd, long limit, int idle, int window, int gate, const struct in6_addr *want6, int waitexit)
{
	int fam6 = 0;
	socklen_t dl = sizeof fam6;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &fam6, &dl) < 0)
		die("SO_DOMAIN");
	fam6 = fam6 == AF_INET6;
	set_rcvtimeo(fd, 200);
	poll_once(fd);
	printf("ready %d %d\n", local_port(fd), fd);
	fflush(stdout);
	pthread_t th;
	pthread_create(&th, NULL, stdin_thread, NULL);
	pthread_detach(th);
	if (gate)
		while (!atomic_load(&go_flag))
			usleep(10000);

	uint8_t buf[MAXDG + 64];
	double last = now_ms();
	int idled = 0;
	while (!atomic_load(&stop_flag) && (limit == 0 || total < limit)) {
		union {
			struct sockaddr_in in;
			struct sockaddr_in6 in6;
		} from;
		socklen_t fl = sizeof from;
		memset(&from, 0, sizeof from);
		ssize_t n = recvfrom(fd, buf, sizeof buf, gate ? MSG_DONTWAIT : 0, (struct sockaddr *)&from, &fl);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
				if (gate && errno != EINTR)
					break; /* drained */
				if (now_ms() - last > idle) {
					idled = 1;
					break;
				}
				continue;
			}
			die("recvfrom");
		}
		last = now_ms();
		struct hdr h;
		pthread_mutex_lock(&mu);
		total++;
		if (!check(buf, n, &h)) {
			bad++;
			pthread_mutex_unlock(&mu);
			continue;
		}
		if (fam6 ? fl != sizeof from.in6 || from.in6.sin6_family != AF_INET6 || ntohs(from.in6.sin6_port) != h.port ||
			       (want6 && memcmp(&from.in6.sin6_addr, want6, sizeof *want6) != 0)
			 : fl != sizeof from.in || from.in.sin_family != AF_INET ||
			       from.in.sin_addr.s_addr != htonl(INADDR_LOOPBACK) || ntohs(from.in.sin_port) != h.port)
			badsrc++;
		struct sender_stat *s = &st[h.sender];
		if (s->got == 0) {
			s->first = h.seq;
			s->next = h.seq;
		}
		s->got++;
		if (h.seq < s->next) {
			s->reorder++;
		} else {
			s->gaps += h.seq - s->next;
			s->next = h.seq + 1;
		}
		s->last = h.seq;
		pthread_mutex_unlock(&mu);
		if (window > 0 && (h.seq % window == (uint32_t)window - 1 || (h.count && h.seq == h.count - 1))) {
			uint32_t ack[2] = {ACKMAGIC, h.seq};
			if (sendto(fd, ack, sizeof ack, 0, (struct sockaddr *)&from, fl) != sizeof ack)
				die("sendto ack");
		}
	}
	report();
	long gaps = 0, reorder = 0;
	for (int i = 0; i < MAXSENDERS; i++) {
		gaps += st[i].gaps;
		reorder += st[i].reorder;
	}
	printf("summary total %ld bad %ld reorder %ld badsrc %ld gaps %ld idle %d\n", total, bad, reorder, badsrc,
	       gaps, idled);
	fflush(stdout);
	if (waitexit)
		wait_exit();
	close(fd);
	return 0;
}

/* ---- sender ---- */

#define MBATCH 4

/* send_batch sends datagrams seq.. seq+MBATCH-1 (fewer at the end of count) with one sendmmsg
 * and checks that every one went whole; 0 on success. */
static int send_batch(int fd, void *to, socklen_t tolen, uint32_t id, uint32_t seq, long count, uint16_t port, int fixed)
{
	static uint8_t bufs[MBATCH][MAXDG];
	struct mmsghdr mv[MBATCH];
	struct iovec iov[MBATCH];
	int k = 0;
	memset(mv, 0, sizeof mv);
	for (; k < MBATCH && (count == 0 || seq + (uint32_t)k < (uint32_t)count); k++) {
		iov[k].iov_base = bufs[k];
		iov[k].iov_len = build(bufs[k], id, seq + (uint32_t)k, (uint32_t)count, port, fixed);
		mv[k].msg_hdr.msg_name = to;
		mv[k].msg_hdr.msg_namelen = tolen;
		mv[k].msg_hdr.msg_iov = &iov[k];
		mv[k].msg_hdr.msg_iovlen = 1;
	}
	int r = sendmmsg(fd, mv, (unsigned)k, 0);
	if (r != k) {
		printf("FATAL sendmmsg %d of %d: %s\n", r, k, strerror(errno));
		return 2;
	}
	for (int i = 0; i < k; i++)
		if (mv[i].msg_len != iov[i].iov_len) {
			printf("FATAL sendmmsg message %d: msg_len %u of %zu\n", i, mv[i].msg_len, iov[i].iov_len);
			return 2;
		}
	return 0;
}

static int tx_main(int argc, char **argv)
{
	int port = 0, id = 0, window = 0, pause_us = 0, duration = 0, conn = 0, nonblock = 0, fixed = 0;
	int mcast = 0, waitexit = 0, nacks = 1, unbound = 0, mmsg = 0, v6 = 0;
	long count = 0;
	const char *dst = "127.0.0.1", *ifname = NULL;
	int o;
	while ((o = getopt(argc, argv, "p:d:s:n:a:A:u:T:cNl:mUM6I:W")) != -1) {
		switch (o) {
		case 'p': port = atoi(optarg); break;
		case 'd': dst = optarg; break;
		case 's': id = atoi(optarg); break;
		case 'n': count = atol(optarg); break;
		case 'a': window = atoi(optarg); break;
		case 'A': nacks = atoi(optarg); break;
		case 'u': pause_us = atoi(optarg); break;
		case 'T': duration = atoi(optarg); break;
		case 'c': conn = 1; break;
		case 'N': nonblock = 1; break;
		case 'l': fixed = atoi(optarg); break;
		case 'm': mcast = 1; break;
		case 'U': unbound = 1; break;
		case 'M': mmsg = 1; break;
		case '6': v6 = 1; break;
		case 'I': ifname = optarg; break;
		case 'W': waitexit = 1; break;
		default: return 2;
		}
	}

	if (id < 0 || id >= MAXSENDERS || (count == 0 && duration == 0) || (mmsg && (conn || window % MBATCH))) {
		printf("FATAL bad arguments\n");
		return 2;
	}
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} to = {0};
	socklen_t tolen = v6 ? sizeof to.in6 : sizeof to.in;
	if (v6) {
		to.in6.sin6_family = AF_INET6;
		to.in6.sin6_port = htons(port);
		if (inet_pton(AF_INET6, dst, &to.in6.sin6_addr) != 1)
			die("destination address");
	} else {
		to.in.sin_family = AF_INET;
		to.in.sin_port = htons(port);
		if (inet_pton(AF_INET, dst, &to.in.sin_addr) != 1)
			die("destination address");
	}
	if (mcast && v6) {
		int idx = ifname ? (int)if_nametoindex(ifname) : 0, loop = 1;
		struct ip_mreqn mif = {.imr_ifindex = idx};
		if (!idx)
			die("-6 -m needs -I ifname");
		if (IN6_IS_ADDR_V4MAPPED(&to.in6.sin6_addr)
			    ? setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mif, sizeof mif) < 0
			    : setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof idx) < 0 ||
				      setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &loop, sizeof loop) < 0)
			die("multicast options");
	} else if (mcast) {
		struct in_addr lo = {.s_addr = htonl(INADDR_LOOPBACK)};
		unsigned char loop = 1;
		if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo) < 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) < 0)
			die("multicast options");
	}
	if (conn) {
		if (connect(fd, (struct sockaddr *)&to, tolen) < 0)
			die("connect");
	} else if (unbound) {
		/* the port is at the same offset in both */
		__typeof__(to) other = to;
		other.in.sin_port = htons(port + 1);
		if (sendto(fd, "", 0, 0, (struct sockaddr *)&other, tolen) < 0)
			die("first send");
	} else if (v6) {
		struct sockaddr_in6 a = {.sin6_family = AF_INET6};
		if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
			die("bind");
	} else {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
			die("bind");
	}
	if (nonblock && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		die("O_NONBLOCK");
	set_rcvtimeo(fd, 5000);
	int myport = local_port(fd);
	printf("ready %d %d\n", myport, fd);
	fflush(stdout);
	pthread_t th;
	pthread_create(&th, NULL, stdin_thread, NULL);
	pthread_detach(th);

	uint8_t buf[MAXDG];
	long ok = 0, eagain = 0;
	double start = now_ms();
	for (uint32_t seq = 0; count == 0 || seq < (uint32_t)count; seq++) {
		if ((duration > 0 && now_ms() - start > duration) || atomic_load(&stop_flag))
			break;
		if (mmsg) {
			if (seq % MBATCH == 0 && send_batch(fd, &to, tolen, (uint32_t)id, seq, count, (uint16_t)myport, fixed) != 0)
				return 2;
			ok++;
		} else {
			size_t n = build(buf, (uint32_t)id, seq, (uint32_t)count, (uint16_t)myport, fixed);
			ssize_t r = conn ? send(fd, buf, n, 0) : sendto(fd, buf, n, 0, (struct sockaddr *)&to, tolen);
			if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && nonblock) {
				eagain++;
			} else if (r < 0) {
				die("send");
			} else if ((size_t)r != n) {
				printf("FATAL short send %zd of %zu\n", r, n);
				return 2;
			} else {
				ok++;
			}
		}
		if (window > 0 && (seq % window == (uint32_t)window - 1 || seq == (uint32_t)count - 1)) {
			for (int acked = 0; acked < nacks;) {
				uint32_t ack[2];
				ssize_t m = recv(fd, ack, sizeof ack, 0);
				if (m < 0 && errno == EINTR)
					continue;
				if (m < 0 && nonblock && (errno == EAGAIN || errno == EWOULDBLOCK)) {
					usleep(100);
					if (now_ms() - start > 600000)
						break;
					continue;
				}
				if (m < 0) {
					printf("ack timeout seq %u: %s\n", seq, strerror(errno));
					fflush(stdout);
					return 3;
				}
				if (m == sizeof ack && ack[0] == ACKMAGIC && ack[1] == seq) {
					acked++;
					continue;
				}
				printf("bad ack %zd %x %u for seq %u\n", m, ack[0], ack[1], seq);
				fflush(stdout);
				return 3;
			}
		}
		if (pause_us > 0)
			usleep(pause_us);
	}
	printf("sent %ld eagain %ld\n", ok, eagain);
	fflush(stdout);
	if (waitexit)
		wait_exit();
	close(fd);
	return 0;
}

/* ---- one process ---- */

static int self_main(int argc, char **argv)
{
	long count = 0;
	int waitexit = 0, o;
	while ((o = getopt(argc, argv, "n:W")) != -1) {
		switch (o) {
		case 'n': count = atol(optarg); break;
		case 'W': waitexit = 1; break;
		default: return 2;
		}
	}
	int fa = socket(AF_INET, SOCK_DGRAM, 0), fb = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in b = a;
	socklen_t al = sizeof a, bl = sizeof b;
	if (fa < 0 || fb < 0 || bind(fa, (struct sockaddr *)&a, sizeof a) < 0 ||
	    bind(fb, (struct sockaddr *)&b, sizeof b) < 0 || getsockname(fa, (struct sockaddr *)&a, &al) < 0 ||
	    getsockname(fb, (struct sockaddr *)&b, &bl) < 0)
		die("sockets");
	set_rcvtimeo(fa, 5000);
	set_rcvtimeo(fb, 5000);
	poll_once(fa);
	printf("ready %d %d\n", fa, fb);
	fflush(stdout);
	pthread_t th;
	pthread_create(&th, NULL, stdin_thread, NULL);
	pthread_detach(th);
	uint8_t buf[MAXDG + 64], out[MAXDG];
	long okc = 0, badc = 0;
	for (uint32_t seq = 0; seq < (uint32_t)count; seq++) {
		size_t n = build(out, 7, seq, (uint32_t)count, ntohs(a.sin_port), 0);
		if (sendto(fa, out, n, 0, (struct sockaddr *)&b, sizeof b) != (ssize_t)n)
			die("sendto A->B");
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t m = recvfrom(fb, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
		if (m < 0)
			die("recvfrom B");
		struct hdr h;
		if (!check(buf, m, &h) || h.seq != seq || from.sin_port != a.sin_port ||
		    from.sin_addr.s_addr != a.sin_addr.s_addr) {
			badc++;
			continue;
		}
		uint32_t ack[2] = {ACKMAGIC, seq};
		if (sendto(fb, ack, sizeof ack, 0, (struct sockaddr *)&from, fl) != sizeof ack)
			die("sendto B->A");
		fl = sizeof from;
		m = recvfrom(fa, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
		if (m < 0)
			die("recvfrom A");
		uint32_t got[2];
		memcpy(got, buf, sizeof got);
		if (m != sizeof ack || got[0] != ACKMAGIC || got[1] != seq || from.sin_port != b.sin_port)
			badc++;
		else
			okc++;
	}
	printf("self ok %ld bad %ld\n", okc, badc);
	fflush(stdout);
	if (waitexit)
		wait_exit();
	close(fa);
	close(fb);
	return 0;
}

/* mself: multicast inside one process. Sockets B and C join group on 127.0.0.1 (bound to
 * INADDR_ANY:port with SO_REUSEADDR); A (bound to 127.0.0.1:0, IP_MULTICAST_IF 127.0.0.1) sends
 * count datagrams to the group, each read back by B and by C before the next is sent, then
 * B and C must have nothing more queued (no second copy) within 200 ms.
 * Prints "ready FDB FDC", then "mself ok N bad B extra E". */
static int mself_main(int argc, char **argv)
{
	long count = 0;
	int waitexit = 0, o;
	const char *group = "239.255.77.2";
	while ((o = getopt(argc, argv, "n:m:W")) != -1) {
		switch (o) {
		case 'n': count = atol(optarg); break;
		case 'm': group = optarg; break;
		case 'W': waitexit = 1; break;
		default: return 2;
		}
	}
	int fa = socket(AF_INET, SOCK_DGRAM, 0), fr[2];
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (fa < 0 || bind(fa, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fa, (struct sockaddr *)&a, &al) < 0)
		die("sender socket");
	struct in_addr lo = {.s_addr = htonl(INADDR_LOOPBACK)};
	if (setsockopt(fa, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo) < 0)
		die("IP_MULTICAST_IF");
	struct sockaddr_in g = {.sin_family = AF_INET};
	if (inet_pton(AF_INET, group, &g.sin_addr) != 1)
		die("group address");
	for (int i = 0; i < 2; i++) {
		int one = 1;
		struct sockaddr_in b = {.sin_family = AF_INET, .sin_port = g.sin_port};
		fr[i] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fr[i] < 0 || setsockopt(fr[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
			die("receiver socket");
		if (i == 0) {
			if (bind(fr[0], (struct sockaddr *)&b, sizeof b) < 0)
				die("bind B");
			socklen_t bl = sizeof b;
			if (getsockname(fr[0], (struct sockaddr *)&b, &bl) < 0)
				die("getsockname B");
			g.sin_port = b.sin_port;
		} else if (bind(fr[1], (struct sockaddr *)&b, sizeof b) < 0) {
			die("bind C");
		}
		struct ip_mreq m = {.imr_multiaddr = g.sin_addr, .imr_interface = lo};
		if (setsockopt(fr[i], IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) < 0)
			die("IP_ADD_MEMBERSHIP");
		set_rcvtimeo(fr[i], 5000);
	}
	poll_once(fr[0]);
	printf("ready %d %d\n", fr[0], fr[1]);
	fflush(stdout);
	pthread_t th;
	pthread_create(&th, NULL, stdin_thread, NULL);
	pthread_detach(th);
	uint8_t buf[MAXDG + 64], out[MAXDG];
	long okc = 0, badc = 0, extra = 0;
	for (uint32_t seq = 0; seq < (uint32_t)count; seq++) {
		size_t n = build(out, 9, seq, (uint32_t)count, ntohs(a.sin_port), 0);
		if (sendto(fa, out, n, 0, (struct sockaddr *)&g, sizeof g) != (ssize_t)n)
			die("sendto group");
		int good = 1;
		for (int i = 0; i < 2; i++) {
			struct sockaddr_in from;
			socklen_t fl = sizeof from;
			ssize_t m = recvfrom(fr[i], buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
			if (m < 0)
				die("recvfrom member");
			struct hdr h;
			if (!check(buf, m, &h) || h.seq != seq || from.sin_port != a.sin_port ||
			    from.sin_addr.s_addr != a.sin_addr.s_addr)
				good = 0;
		}
		if (good)
			okc++;
		else
			badc++;
	}
	for (int i = 0; i < 2; i++) {
		set_rcvtimeo(fr[i], 200);
		while (recv(fr[i], buf, sizeof buf, 0) >= 0)
			extra++;
	}
	printf("mself ok %ld bad %ld extra %ld\n", okc, badc, extra);
	fflush(stdout);
	if (waitexit)
		wait_exit();
	close(fa);
	close(fr[0]);
	close(fr[1]);
	return 0;
}

/* early: a thread blocks in recvfrom on a socket that has no port (and no rule decision) yet;
 * then the main thread binds it, and another socket of the process sends count datagrams to it.
 * The blocked receive must get them (through the rings under the library).
 * Prints "ready FD 0", then "early got N bad B". */
static int early_fd;
static long early_count, early_got, early_bad;
static void *early_thread(void *arg)
{
	(void)arg;
	uint8_t buf[MAXDG + 64];
	for (long i = 0; i < early_count; i++) {
		ssize_t m = recv(early_fd, buf, sizeof buf, 0);
		if (m < 0)
			break;
		struct hdr h;
		if (check(buf, m, &h) && h.seq == (uint32_t)i)
			early_got++;
		else
			early_bad++;
	}
	return NULL;
}

static int early_main(int argc, char **argv)
{
	int o;
	while ((o = getopt(argc, argv, "n:")) != -1) {
		switch (o) {
		case 'n': early_count = atol(optarg); break;
		default: return 2;
		}
	}
	early_fd = socket(AF_INET, SOCK_DGRAM, 0);
	int tx = socket(AF_INET, SOCK_DGRAM, 0);
	if (early_fd < 0 || tx < 0)
		die("sockets");
	set_rcvtimeo(early_fd, 10000);
	pthread_t th;
	pthread_create(&th, NULL, early_thread, NULL);
	usleep(200000); /* the receive is blocked by now */
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (bind(early_fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(early_fd, (struct sockaddr *)&a, &al) < 0)
		die("bind");
	printf("ready %d 0\n", early_fd);
	fflush(stdout);
	uint8_t out[MAXDG];
	for (uint32_t seq = 0; seq < (uint32_t)early_count; seq++) {
		size_t n = build(out, 3, seq, (uint32_t)early_count, 0, 64);
		if (sendto(tx, out, n, 0, (struct sockaddr *)&a, sizeof a) != (ssize_t)n)
			die("sendto");
		if (seq % 64 == 63)
			usleep(1000); /* no receive-buffer overflow */
	}
	pthread_join(th, NULL);
	printf("early got %ld bad %ld\n", early_got, early_bad);
	fflush(stdout);
	return 0;
}

/* forkspill: one socket of the process sends count datagrams to another; then the process forks;
 * the child receives half of them (blocking recvfrom, source checked), the parent the rest
 * (recvmsg with MSG_DONTWAIT until EAGAIN, after the child exited): each datagram once, in order.
 * Prints "ready FDR FDS", "child got N bad B" and "parent got N bad B extra E". */
static int forkspill_main(int argc, char **argv)
{
	long count = 0;
	int o;
	while ((o = getopt(argc, argv, "n:")) != -1) {
		switch (o) {
		case 'n': count = atol(optarg); break;
		default: return 2;
		}
	}
	int r = socket(AF_INET, SOCK_DGRAM, 0), s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in ra = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in sa = ra;
	socklen_t rl = sizeof ra, sl = sizeof sa;
	if (r < 0 || s < 0 || bind(r, (struct sockaddr *)&ra, sizeof ra) < 0 || bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    getsockname(r, (struct sockaddr *)&ra, &rl) < 0 || getsockname(s, (struct sockaddr *)&sa, &sl) < 0)
		die("sockets");
	set_rcvtimeo(r, 5000);
	printf("ready %d %d\n", r, s);
	fflush(stdout);
	uint8_t out[MAXDG], buf[MAXDG + 64];
	for (uint32_t seq = 0; seq < (uint32_t)count; seq++) {
		size_t n = build(out, 5, seq, (uint32_t)count, ntohs(sa.sin_port), 64);
		if (sendto(s, out, n, 0, (struct sockaddr *)&ra, sizeof ra) != (ssize_t)n)
			die("sendto");
	}
	long half = count / 2;
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		long got = 0, bad = 0;
		for (long i = 0; i < half; i++) {
			struct sockaddr_in from;
			socklen_t fl = sizeof from;
			ssize_t m = recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
			if (m < 0)
				break;
			struct hdr h;
			if (check(buf, m, &h) && h.seq == (uint32_t)i && from.sin_port == sa.sin_port && fl == sizeof from)
				got++;
			else
				bad++;
		}
		printf("child got %ld bad %ld\n", got, bad);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	long got = 0, bad = 0, extra = 0;
	for (long i = half;; i++) {
		struct sockaddr_in from;
		struct iovec v = {buf, sizeof buf};
		struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &v, .msg_iovlen = 1};
		ssize_t k = recvmsg(r, &m, MSG_DONTWAIT);
		if (k < 0)
			break;
		struct hdr h;
		if (i >= count)
			extra++;
		else if (check(buf, k, &h) && h.seq == (uint32_t)i && from.sin_port == sa.sin_port && m.msg_flags == 0)
			got++;
		else
			bad++;
	}
	printf("parent got %ld bad %ld extra %ld\n", got, bad, extra);
	fflush(stdout);
	return 0;
}

static int noop_main(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("noop socket");
	poll_once(fd);
	close(fd);
	printf("noop done\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: shmudp rx|tx|self|noop [options]\n");
		return 2;
	}
	const char *mode = argv[1];
	argv[1] = argv[0];
	if (strcmp(mode, "rx") == 0)
		return rx_main(argc - 1, argv + 1);
	if (strcmp(mode, "tx") == 0)
		return tx_main(argc - 1, argv + 1);
	if (strcmp(mode, "self") == 0)
		return self_main(argc - 1, argv + 1);
	if (strcmp(mode, "forkspill") == 0)
		return forkspill_main(argc - 1, argv + 1);
	if (strcmp(mode, "early") == 0)
		return early_main(argc - 1, argv + 1);
	if (strcmp(mode, "mself") == 0)
		return mself_main(argc - 1, argv + 1);
	if (strcmp(mode, "noop") == 0)
		return noop_main();
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}

/*
 * fanout: a market-data-like multicast fan-out on the loopback interface.
 *
 *   fanout sub GROUP PORT SECONDS        join GROUP on 127.0.0.1, count datagrams until the
 *                                        publisher's end marker or SECONDS pass; print
 *                                        "received=N lost=N reordered=N"
 *   fanout pub GROUP PORT RATE COUNT     send COUNT 64-byte datagrams at RATE per second (paced by
 *                                        the clock, in bursts of at most 64), then end markers;
 *                                        print "sent=N seconds=S rate=R"
 *
 *   fanout sub GROUP PORT SECONDS IFNAME / fanout pub GROUP PORT RATE COUNT IFNAME
 *                                        with an IPv6 GROUP: AF_INET6 sockets, the subscriber bound
 *                                        to [::]:PORT and joined on IFNAME (IPV6_JOIN_GROUP), the
 *                                        publisher sending through IFNAME (IPV6_MULTICAST_IF)
 *
 * Each datagram carries a 64-bit sequence number; a subscriber counts a gap in the sequence as
 * lost datagrams, a smaller number than the last as reordered. The socket receive buffer is the
 * system default: the loss-free rate is what a subscriber keeps up with as deployed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define END_SEQ UINT64_MAX

static void die(const char *what)
{
	fprintf(stderr, "fanout: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ifindex is IFNAME's index (an IPv6 group needs one), 0 without IFNAME. */
static unsigned ifindex(int argc, char **argv, int i)
{
	if (argc <= i)
		return 0;
	unsigned idx = if_nametoindex(argv[i]);
	if (idx == 0)
		die("IFNAME");
	return idx;
}

static int sub(const char *group, int port, int seconds, unsigned idx)
{
	int one = 1;
	int v6 = strchr(group, ':') != NULL;
	int s = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0)
		die("SO_REUSEADDR");
	if (v6) {
		struct sockaddr_in6 sa6;
		memset(&sa6, 0, sizeof(sa6));
		sa6.sin6_family = AF_INET6;
		sa6.sin6_port = htons((unsigned short)port);
		if (bind(s, (struct sockaddr *)&sa6, sizeof(sa6)) != 0)
			die("bind");
		struct ipv6_mreq mr6;
		memset(&mr6, 0, sizeof(mr6));
		if (inet_pton(AF_INET6, group, &mr6.ipv6mr_multiaddr) != 1 || idx == 0)
			die("IPv6 GROUP and IFNAME");
		mr6.ipv6mr_interface = idx;
		if (setsockopt(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr6, sizeof(mr6)) != 0)
			die("IPV6_JOIN_GROUP");
	} else {
		struct sockaddr_in sa;
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_port = htons((unsigned short)port);
		sa.sin_addr.s_addr = inet_addr(group);
		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0)
			die("bind");
		struct ip_mreq mr;
		mr.imr_multiaddr.s_addr = inet_addr(group);
		mr.imr_interface.s_addr = htonl(INADDR_LOOPBACK);
		if (setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) != 0)
			die("IP_ADD_MEMBERSHIP");
	}
	struct timeval tv = {1, 0};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* ready: the driver waits for this line before it starts the publisher */
	printf("ready\n");
	fflush(stdout);
	uint64_t received = 0, lost = 0, reordered = 0, next = 0;
	double end = now_s() + seconds;
	while (now_s() < end) {
		char b[2048];
		ssize_t n = recv(s, b, sizeof(b), 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			die("recv");
		}
		if (n < 8)
			continue;
		uint64_t seq;
		memcpy(&seq, b, 8);
		if (seq == END_SEQ)
			break;
		received++;
		if (seq > next)
			lost += seq - next;
		if (seq < next)
			reordered++;
		else
			next = seq + 1;
	}
	/* datagrams after the last one seen count as lost too: the publisher said how many it sent */
	printf("received=%llu lost=%llu reordered=%llu last=%llu\n", (unsigned long long)received,
	       (unsigned long long)lost, (unsigned long long)reordered, (unsigned long long)next);
	return 0;
}

static int pub(const char *group, int port, double rate, uint64_t count, unsigned idx)
{
	int v6 = strchr(group, ':') != NULL;
	int s = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	union {
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
	} sa;
	socklen_t salen = v6 ? sizeof(sa.in6) : sizeof(sa.in);
	memset(&sa, 0, sizeof(sa));
	if (v6) {
		int i = (int)idx;
		if (idx == 0 || setsockopt(s, IPPROTO_IPV6, IPV6_MULTICAST_IF, &i, sizeof(i)) != 0)
			die("IPV6_MULTICAST_IF");
		sa.in6.sin6_family = AF_INET6;
		sa.in6.sin6_port = htons((unsigned short)port);
		if (inet_pton(AF_INET6, group, &sa.in6.sin6_addr) != 1)
			die("GROUP");
	} else {
		struct in_addr lo = {htonl(INADDR_LOOPBACK)};
		if (setsockopt(s, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof(lo)) != 0)
			die("IP_MULTICAST_IF");
		sa.in.sin_family = AF_INET;
		sa.in.sin_port = htons((unsigned short)port);
		sa.in.sin_addr.s_addr = inet_addr(group);
	}
	char b[64];
	memset(b, 'm', sizeof(b));
	double t0 = now_s();
	for (uint64_t i = 0; i < count;) {
		/* pace: send what the clock allows, at most 64 at once */
		uint64_t due = (uint64_t)((now_s() - t0) * rate);
		if (due <= i)
			continue;
		for (int k = 0; k < 64 && i < due && i < count; k++, i++) {
			memcpy(b, &i, 8);
			if (sendto(s, b, sizeof(b), 0, (struct sockaddr *)&sa, salen) != (ssize_t)sizeof(b))
				die("sendto");
		}
	}
	double secs = now_s() - t0;
	usleep(200000);
	uint64_t end = END_SEQ;
	memcpy(b, &end, 8);
	for (int k = 0; k < 20; k++) {
		sendto(s, b, sizeof(b), 0, (struct sockaddr *)&sa, salen);
		usleep(10000);
	}
	printf("sent=%llu seconds=%.3f rate=%.0f\n", (unsigned long long)count, secs, (double)count / secs);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "sub") == 0)
		return sub(argv[2], atoi(argv[3]), atoi(argv[4]), ifindex(argc, argv, 5));
	if (argc >= 6 && strcmp(argv[1], "pub") == 0) {
		double rate = atof(argv[4]);
		long long count = atoll(argv[5]);
		if (rate <= 0 || count <= 0 || count > 100000000) {
			fprintf(stderr, "fanout: RATE > 0, COUNT 1..100000000\n");
			return 2;
		}
		return pub(argv[2], atoi(argv[3]), rate, (uint64_t)count, ifindex(argc, argv, 6));
	}
	fprintf(stderr, "usage: fanout sub GROUP PORT SECONDS [IFNAME] | fanout pub GROUP PORT RATE COUNT [IFNAME]\n");
	return 2;
}

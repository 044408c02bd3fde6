/* IPv6 on ::1: UDP and TCP round trips, addresses from getsockname/getpeername/recvfrom, a dual-stack
 * socket receiving IPv4 traffic as v4-mapped addresses, IPV6_V6ONLY refusing it. */
#include "common.h"

static int bound6(int type, int v6only)
{
	int fd = socket(AF_INET6, type, 0);
	if (fd < 0)
		die("socket6");
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof a);
	a.sin6_family = AF_INET6;
	a.sin6_addr = in6addr_any;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind6");
	return fd;
}

static int port6(int fd)
{
	struct sockaddr_in6 a;
	socklen_t l = sizeof a;
	getsockname(fd, (struct sockaddr *)&a, &l);
	return ntohs(a.sin6_port);
}

static struct sockaddr_in6 lo6(int port)
{
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof a);
	a.sin6_family = AF_INET6;
	a.sin6_addr = in6addr_loopback;
	a.sin6_port = htons((uint16_t)port);
	return a;
}

static void show6(const char *label, struct sockaddr_in6 *a, socklen_t l)
{
	char ip[64];
	inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
	out("%s: family %d len %u addr %s\n", label, a->sin6_family, l, ip);
}

int main(void)
{
	char buf[64];
	int probe = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 pa = lo6(0);
	if (probe < 0 || bind(probe, (struct sockaddr *)&pa, sizeof pa) < 0) {
		out("no IPv6 loopback here: skipped\n");
		return finish();
	}
	close(probe);

	out("-- udp over ::1\n");
	int r = bound6(SOCK_DGRAM, 1), s = bound6(SOCK_DGRAM, 1);
	struct sockaddr_in6 to = lo6(port6(r));
	E("sendto ::1", sendto(s, "six", 3, 0, (struct sockaddr *)&to, sizeof to), 3, 0);
	wait_readable(r, 1000);
	struct sockaddr_in6 from;
	socklen_t fl = sizeof from;
	E("recvfrom", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 3, 0);
	show6("source", &from, fl);
	CHECK("source port is sender", ntohs(from.sin6_port) == port6(s));
	struct sockaddr_in v4 = lo_addr(port6(r));
	int s4 = udp_bound(0);
	E("IPv4 send to a v6only socket's port", sendto(s4, "v4", 2, 0, (struct sockaddr *)&v4, sizeof v4), 2, 0);
	msleep(20);
	E("v6only socket gets nothing", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);

	out("-- dual stack\n");
	int d = bound6(SOCK_DGRAM, 0);
	v4 = lo_addr(port6(d));
	E("IPv4 send to a dual-stack socket", sendto(s4, "v4", 2, 0, (struct sockaddr *)&v4, sizeof v4), 2, 0);
	wait_readable(d, 1000);
	fl = sizeof from;
	E("recvfrom", recvfrom(d, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 2, 0);
	show6("source", &from, fl);
	E("reply to the mapped address", sendto(d, "re", 2, 0, (struct sockaddr *)&from, fl), 2, 0);
	wait_readable(s4, 1000);
	E("IPv4 socket gets the reply", recv(s4, buf, sizeof buf, 0), 2, 0);
	E("IPv6 address to an AF_INET socket", sendto(s4, "x", 1, 0, (struct sockaddr *)&to, sizeof to), -1, EAFNOSUPPORT);

	out("-- tcp over ::1\n");
	int l = bound6(SOCK_STREAM, 1);
	E("listen", listen(l, 4), 0, 0);
	int c = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 la = lo6(port6(l));
	E("connect", connect(c, (struct sockaddr *)&la, sizeof la), 0, 0);
	fl = sizeof from;
	int a = (int)OK("accept", accept(l, (struct sockaddr *)&from, &fl));
	show6("peer", &from, fl);
	E("send", send(c, "tcp6", 4, 0), 4, 0);
	E("recv", recv_all(a, buf, 4), 4, 0);
	fl = sizeof from;
	getpeername(c, (struct sockaddr *)&from, &fl);
	show6("getpeername", &from, fl);
	close(c);
	close(a);
	close(l);

	out("-- tcp v4 client to a dual-stack listener\n");
	l = bound6(SOCK_STREAM, 0);
	listen(l, 4);
	c = tcp_connect_port(port6(l));
	fl = sizeof from;
	a = (int)OK("accept", accept(l, (struct sockaddr *)&from, &fl));
	show6("peer", &from, fl);
	E("send", send(a, "mapped", 6, 0), 6, 0);
	E("recv", recv_all(c, buf, 6), 6, 0);
	close(c);
	close(a);
	close(l);
	return finish();
}

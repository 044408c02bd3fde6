/* IPv6 and dual-stack TCP and UDP beyond a first round trip: streams and ping-pong over ::1 (long
 * enough for a shared-memory transport to take over), an IPv4 client of a dual-stack listener and
 * an AF_INET6 client of an IPv4 listener through a v4-mapped address (addresses from accept,
 * getsockname, getpeername, recvfrom and recvmsg in the family and form the kernel gives), a
 * v6only listener refusing IPv4, IPV6_V6ONLY's default (net.ipv6.bindv6only), and a dual-stack
 * UDP socket receiving from an IPv4 and an IPv6 sender through recvmsg. */
#include "common.h"

static int sock6(int type, int v6only)
{
	int fd = socket(AF_INET6, type, 0);
	if (fd < 0)
		die("socket6");
	if (v6only >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) < 0)
		die("IPV6_V6ONLY");
	return fd;
}

static int bound6(int type, int v6only, const struct in6_addr *addr)
{
	int fd = sock6(type, v6only);
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof a);
	a.sin6_family = AF_INET6;
	a.sin6_addr = *addr;
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

/* name prints an address the way the kernel wrote it: length, family, address, and for IPv6 the
 * flow info and scope id; ports only as "same as" checks by the callers (they vary per run). */
static void name(const char *label, const void *sa, socklen_t l)
{
	const struct sockaddr *s = sa;
	char ip[64] = "?";
	if (l == 0) {
		out("%s: len 0\n", label);
		return;
	}
	if (s->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = sa;
		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
		out("%s: len %u AF_INET6 %s flow %u scope %u\n", label, l, ip, a->sin6_flowinfo, a->sin6_scope_id);
	} else if (s->sa_family == AF_INET) {
		const struct sockaddr_in *a = sa;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
		out("%s: len %u AF_INET %s\n", label, l, ip);
	} else {
		out("%s: len %u family %d\n", label, l, s->sa_family);
	}
}

static void names(const char *who, int fd)
{
	struct sockaddr_storage a;
	char label[64];
	socklen_t l = sizeof a;
	memset(&a, 0, sizeof a);
	V("getsockname", getsockname(fd, (struct sockaddr *)&a, &l));
	snprintf(label, sizeof label, "%s getsockname", who);
	name(label, &a, l);
	l = sizeof a;
	memset(&a, 0, sizeof a);
	V("getpeername", getpeername(fd, (struct sockaddr *)&a, &l));
	snprintf(label, sizeof label, "%s getpeername", who);
	name(label, &a, l);
}

/* exchange sends n verified bytes each way, then rounds one-byte ping-pongs, and a recvfrom with
 * an address buffer on the stream (the kernel reports no address for TCP). */
static void exchange(int c, int a, size_t n, int rounds)
{
	static unsigned char tx[1 << 20], rx[1 << 20];
	fill(tx, n, 7);
	memset(rx, 0, n);
	CHECK("client sends the stream", send_all(c, tx, n) == 0);
	CHECK("server receives it intact", recv_all(a, rx, n) == (long)n && verify(rx, n, 7));
	fill(tx, n, 11);
	memset(rx, 0, n);
	CHECK("server sends the stream", send_all(a, tx, n) == 0);
	CHECK("client receives it intact", recv_all(c, rx, n) == (long)n && verify(rx, n, 11));
	int ok = 1;
	for (int i = 0; i < rounds && ok; i++) {
		char b = (char)i, r = 0;
		ok = send(c, &b, 1, 0) == 1 && recv(a, &r, 1, 0) == 1 && r == b && send(a, &r, 1, 0) == 1 &&
		     recv(c, &r, 1, 0) == 1 && r == b;
	}
	CHECK("ping-pong", ok);
	struct sockaddr_in6 from;
	memset(&from, 0x55, sizeof from);
	socklen_t fl = sizeof from;
	E("send", send(c, "abc", 3, 0), 3, 0);
	E("recvfrom with an address buffer", recvfrom(a, rx, 3, MSG_WAITALL, (struct sockaddr *)&from, &fl), 3, 0);
	out("recvfrom address length %u\n", fl);
}

static void accepted(int l, int *a, const char *label)
{
	struct sockaddr_storage from;
	memset(&from, 0, sizeof from);
	socklen_t fl = sizeof from;
	*a = (int)OK("accept", accept(l, (struct sockaddr *)&from, &fl));
	name(label, &from, fl);
}

int main(void)
{
	int probe = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 pa = addr6("::1", 0);
	if (probe < 0 || bind(probe, (struct sockaddr *)&pa, sizeof pa) < 0) {
		out("no IPv6 loopback here: skipped\n");
		return finish();
	}
	close(probe);

	out("-- IPV6_V6ONLY default\n");
	int s = sock6(SOCK_STREAM, -1), v = -1;
	socklen_t vl = sizeof v;
	V("getsockopt IPV6_V6ONLY", getsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v, &vl));
	FILE *f = fopen("/proc/sys/net/ipv6/bindv6only", "r");
	int sys = -1;
	if (f != NULL) {
		if (fscanf(f, "%d", &sys) != 1)
			sys = -1;
		fclose(f);
	}
	CHECK("default is net.ipv6.bindv6only", sys < 0 || v == sys);
	close(s);

	out("-- tcp over ::1\n");
	int l = bound6(SOCK_STREAM, 1, &in6addr_loopback), a;
	E("listen", listen(l, 8), 0, 0);
	int c = sock6(SOCK_STREAM, -1);
	struct sockaddr_in6 to = addr6("::1", port6(l));
	E("connect ::1", connect(c, (struct sockaddr *)&to, sizeof to), 0, 0);
	accepted(l, &a, "accept peer");
	names("client", c);
	names("server", a);
	CHECK("client peer port is the listener's", peer_port_of(c) == port6(l));
	exchange(c, a, 300000, 300);
	close(c);
	close(a);
	close(l);

	out("-- IPv4 client to a dual-stack listener\n");
	l = bound6(SOCK_STREAM, 0, &in6addr_any);
	E("listen", listen(l, 8), 0, 0);
	c = tcp_connect_port(port6(l));
	accepted(l, &a, "accept peer");
	names("client", c);
	names("server", a);
	exchange(c, a, 300000, 300);
	close(c);
	close(a);

	out("-- AF_INET6 client to a mapped address\n");
	c = sock6(SOCK_STREAM, 0);
	to = addr6("::ffff:127.0.0.1", port6(l));
	E("connect ::ffff:127.0.0.1", connect(c, (struct sockaddr *)&to, sizeof to), 0, 0);
	accepted(l, &a, "accept peer");
	names("client", c);
	names("server", a);
	exchange(c, a, 100000, 100);
	close(c);
	close(a);
	close(l);

	out("-- AF_INET6 client to an IPv4 listener\n");
	l = tcp_listener(0);
	c = sock6(SOCK_STREAM, 0);
	to = addr6("::ffff:127.0.0.1", port_of(l));
	E("connect ::ffff:127.0.0.1", connect(c, (struct sockaddr *)&to, sizeof to), 0, 0);
	accepted(l, &a, "accept peer");
	names("client", c);
	names("server", a);
	exchange(c, a, 100000, 100);
	close(c);
	close(a);
	close(l);

	out("-- v6only client cannot use a mapped address\n");
	l = tcp_listener(0);
	c = sock6(SOCK_STREAM, 1);
	to = addr6("::ffff:127.0.0.1", port_of(l));
	E("connect ::ffff:127.0.0.1", connect(c, (struct sockaddr *)&to, sizeof to), -1, ENETUNREACH);
	close(c);
	close(l);

	out("-- v6only listener refuses IPv4\n");
	l = bound6(SOCK_STREAM, 1, &in6addr_any);
	E("listen", listen(l, 8), 0, 0);
	c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in v4 = lo_addr(port6(l));
	E("IPv4 connect", connect(c, (struct sockaddr *)&v4, sizeof v4), -1, ECONNREFUSED);
	close(c);
	close(l);

	out("-- dual-stack UDP receiver, IPv4 and IPv6 senders, recvmsg\n");
	int d = bound6(SOCK_DGRAM, 0, &in6addr_any);
	int s4 = udp_bound(0);
	int s6 = bound6(SOCK_DGRAM, 1, &in6addr_loopback);
	v4 = lo_addr(port6(d));
	to = addr6("::1", port6(d));
	E("IPv4 sendto", sendto(s4, "four", 4, 0, (struct sockaddr *)&v4, sizeof v4), 4, 0);
	wait_readable(d, 1000);
	for (int i = 0; i < 2; i++) {
		char buf[16];
		struct sockaddr_storage from;
		memset(&from, 0, sizeof from);
		struct iovec iov = {buf, sizeof buf};
		struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1};
		long n = V("recvmsg", recvmsg(d, &m, 0));
		show("payload", buf, n);
		name("recvmsg source", &from, m.msg_namelen);
		if (i == 0) {
			CHECK("source port is the IPv4 sender's", ntohs(((struct sockaddr_in6 *)&from)->sin6_port) == port_of(s4));
			E("reply to the mapped source", sendto(d, "back", 4, 0, (struct sockaddr *)&from, m.msg_namelen), 4, 0);
			wait_readable(s4, 1000);
			struct sockaddr_in f4;
			socklen_t f4l = sizeof f4;
			E("IPv4 sender gets the reply", recvfrom(s4, buf, sizeof buf, 0, (struct sockaddr *)&f4, &f4l), 4, 0);
			name("reply source", &f4, f4l);
			E("IPv6 sendto", sendto(s6, "six", 3, 0, (struct sockaddr *)&to, sizeof to), 3, 0);
			wait_readable(d, 1000);
		}
	}

	out("-- UDP connect to a mapped address\n");
	int u = sock6(SOCK_DGRAM, 0);
	v4 = lo_addr(port_of(s4));
	to = addr6("::ffff:127.0.0.1", port_of(s4));
	E("connect ::ffff:127.0.0.1", connect(u, (struct sockaddr *)&to, sizeof to), 0, 0);
	names("udp", u);
	E("send", send(u, "conn", 4, 0), 4, 0);
	wait_readable(s4, 1000);
	char buf[16];
	struct sockaddr_in f4;
	socklen_t f4l = sizeof f4;
	E("IPv4 socket receives", recvfrom(s4, buf, sizeof buf, 0, (struct sockaddr *)&f4, &f4l), 4, 0);
	name("source", &f4, f4l);
	CHECK("source port is the connected socket's", ntohs(f4.sin_port) == port6(u));
	close(u);
	close(d);
	close(s4);
	close(s6);
	return finish();
}

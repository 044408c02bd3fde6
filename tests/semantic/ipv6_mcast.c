/* IPv6 multicast, and IPv4 groups on dual-stack sockets, in a network namespace this program
 * makes: a veth interface gx0 (fd00::1, fd00::2, fe80::1 and 10.9.0.1; its peer gx1 up without
 * addresses), where the kernel loops a group's datagrams back to the host's members (one larger
 * than the MTU too; with the peer down it loops none of its fragments back). IPV6_JOIN_GROUP and
 * IPV6_LEAVE_GROUP, MCAST_JOIN_GROUP, source-specific joins and source blocks,
 * IPV6_MULTICAST_LOOP/HOPS/IF/ALL, which sockets get a group's datagram (bound to the wildcard,
 * to the group, to another group; joined or only listening through IPV6_MULTICAST_ALL),
 * readiness after the read, link-local and interface-local groups, a link-local source, lo,
 * IPv4 groups joined on a dual-stack socket (the source mapped; the loop is
 * IPV6_MULTICAST_LOOP's) and one socket receiving a group's datagrams from an IPv4 and an IPv6
 * sender. Without the privilege to make a namespace it prints "skipped" (in both runs). About
 * 7 s a run: every "nothing" waits 300 ms. */
// timeout: 40s
#include "common.h"

#include <net/if.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/select.h>

static unsigned idx; /* gx0's interface index */

/* udp6 is an AF_INET6 UDP socket bound to ip:port (ip NULL: unbound), v6only as given. */
static int udp6(const char *ip, int port, int v6only)
{
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket udp6");
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) < 0)
		die("IPV6_V6ONLY");
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ip) {
		struct sockaddr_in6 a = addr6(ip, port);
		if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
			die("bind [%s]:%d", ip, port);
	}
	return fd;
}

static int udp4(const char *ip, int port)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket udp4");
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, ip, &a.sin_addr);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind %s:%d", ip, port);
	return fd;
}

static long join6(const char *label, int fd, const char *group, unsigned ifindex)
{
	struct ipv6_mreq m;
	memset(&m, 0, sizeof m);
	inet_pton(AF_INET6, group, &m.ipv6mr_multiaddr);
	m.ipv6mr_interface = ifindex;
	return V(label, setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof m));
}

static long leave6(const char *label, int fd, const char *group, unsigned ifindex)
{
	struct ipv6_mreq m;
	memset(&m, 0, sizeof m);
	inet_pton(AF_INET6, group, &m.ipv6mr_multiaddr);
	m.ipv6mr_interface = ifindex;
	return V(label, setsockopt(fd, IPPROTO_IPV6, IPV6_LEAVE_GROUP, &m, sizeof m));
}

/* gsr fills a group_source_req (or, source NULL, the group_req at its start) for level's family. */
static struct group_source_req gsr(int family, const char *group, const char *source)
{
	struct group_source_req r;
	memset(&r, 0, sizeof r);
	r.gsr_interface = idx;
	if (family == AF_INET6) {
		struct sockaddr_in6 *g = (struct sockaddr_in6 *)&r.gsr_group, *s = (struct sockaddr_in6 *)&r.gsr_source;
		g->sin6_family = AF_INET6;
		inet_pton(AF_INET6, group, &g->sin6_addr);
		if (source) {
			s->sin6_family = AF_INET6;
			inet_pton(AF_INET6, source, &s->sin6_addr);
		}
	} else {
		struct sockaddr_in *g = (struct sockaddr_in *)&r.gsr_group, *s = (struct sockaddr_in *)&r.gsr_source;
		g->sin_family = AF_INET;
		inet_pton(AF_INET, group, &g->sin_addr);
		if (source) {
			s->sin_family = AF_INET;
			inet_pton(AF_INET, source, &s->sin_addr);
		}
	}
	return r;
}

static long mcast(const char *label, int fd, int level, int name, const char *group, const char *source)
{
	struct group_source_req r = gsr(level == IPPROTO_IPV6 ? AF_INET6 : AF_INET, group, source);
	socklen_t l = source ? sizeof r : sizeof(struct group_req);
	return V(label, setsockopt(fd, level, name, &r, l));
}

static long join4(const char *label, int fd, const char *group)
{
	struct ip_mreqn m;
	memset(&m, 0, sizeof m);
	inet_pton(AF_INET, group, &m.imr_multiaddr);
	m.imr_ifindex = (int)idx;
	return V(label, setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m));
}

static long send6(const char *label, int fd, const char *group, int port, const char *msg)
{
	struct sockaddr_in6 a = addr6(group, port);
	return V(label, sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&a, sizeof a));
}

static long send4(const char *label, int fd, const char *group, int port, const char *msg)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, group, &a.sin_addr);
	return V(label, sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&a, sizeof a));
}

/* got prints every datagram fd holds (waiting up to 300 ms for the first, 50 ms for each next):
 * its bytes and its source as recvfrom reports it (family, address, whether the port is
 * sender_port, scope id), or "nothing". */
static void got(const char *label, int fd, int sender_port)
{
	int n = 0;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, n == 0 ? 300 : 50) <= 0)
			break;
		char buf[64], ip[64];
		struct sockaddr_storage from;
		socklen_t fl = sizeof from;
		memset(&from, 0, sizeof from);
		ssize_t r = recvfrom(fd, buf, sizeof buf - 1, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (r < 0) {
			out("%s: recvfrom -1 %s\n", label, ename(errno));
			break;
		}
		buf[r] = 0;
		n++;
		if (from.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&from;
			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
			if (a->sin6_scope_id == idx && idx != 0)
				out("%s: \"%s\" from len %u family 6 [%s] sender port %s flow %u scope gx0\n", label, buf, fl, ip,
				    ntohs(a->sin6_port) == sender_port ? "yes" : "no", a->sin6_flowinfo);
			else
				out("%s: \"%s\" from len %u family 6 [%s] sender port %s flow %u scope %u\n", label, buf, fl, ip,
				    ntohs(a->sin6_port) == sender_port ? "yes" : "no", a->sin6_flowinfo, a->sin6_scope_id);
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)&from;
			inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
			out("%s: \"%s\" from len %u family 4 %s sender port %s\n", label, buf, fl, ip,
			    ntohs(a->sin_port) == sender_port ? "yes" : "no");
		}
	}
	if (n == 0)
		out("%s: nothing\n", label);
}

static void getint(const char *label, int fd, int level, int name)
{
	int v = -7;
	socklen_t l = sizeof v;
	int r = getsockopt(fd, level, name, &v, &l);
	if (r < 0)
		out("%s = -1 %s\n", label, ename(errno));
	else
		out("%s = %d (len %u)\n", label, v, l);
}

/* setint sets an int option and returns setsockopt's result (not printed). */
static long setint(int fd, int level, int name, int v)
{
	return setsockopt(fd, level, name, &v, sizeof v);
}

int main(void)
{
	if (unshare(CLONE_NEWNET) != 0 ||
	    system("ip link set lo up && ip link add gx0 type veth peer name gx1 && "
		   "sysctl -qw net.ipv6.conf.gx0.addr_gen_mode=1 && sysctl -qw net.ipv6.conf.gx1.addr_gen_mode=1 && "
		   "ip link set gx1 up && ip link set gx0 up && "
		   "ip addr add fd00::1/64 dev gx0 nodad && ip addr add fd00::2/64 dev gx0 nodad && "
		   "ip addr add fe80::1/64 dev gx0 nodad && "
		   "ip addr add 10.9.0.1/24 dev gx0 && ip route add 224.0.0.0/4 dev gx0") != 0 ||
	    (idx = if_nametoindex("gx0")) == 0) {
		out("no namespace of our own here: skipped\n");
		return finish();
	}
	const int P = 7001;

	out("-- options\n");
	int s = udp6("fd00::1", 0, 0);
	int sp = port_of(s);
	getint("IPV6_MULTICAST_LOOP default", s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP);
	getint("IPV6_MULTICAST_HOPS default", s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS);
	getint("IPV6_MULTICAST_IF default", s, IPPROTO_IPV6, IPV6_MULTICAST_IF);
	getint("IPV6_MULTICAST_ALL default", s, IPPROTO_IPV6, IPV6_MULTICAST_ALL);
	E("IPV6_MULTICAST_HOPS 5", setint(s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, 5), 0, 0);
	getint("IPV6_MULTICAST_HOPS", s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS);
	E("IPV6_MULTICAST_HOPS 256", setint(s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, 256), -1, EINVAL);
	E("IPV6_MULTICAST_HOPS -1 (the default)", setint(s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, -1), 0, 0);
	getint("IPV6_MULTICAST_HOPS", s, IPPROTO_IPV6, IPV6_MULTICAST_HOPS);
	E("IPV6_MULTICAST_LOOP 2", setint(s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 2), -1, EINVAL);
	V("IPV6_MULTICAST_IF 999", setint(s, IPPROTO_IPV6, IPV6_MULTICAST_IF, 999));
	E("IPV6_MULTICAST_IF gx0", setint(s, IPPROTO_IPV6, IPV6_MULTICAST_IF, (int)idx), 0, 0);
	{
		int v = 0;
		socklen_t l = sizeof v;
		getsockopt(s, IPPROTO_IPV6, IPV6_MULTICAST_IF, &v, &l);
		CHECK("IPV6_MULTICAST_IF reads gx0", v == (int)idx);
	}

	out("-- who gets a group's datagram\n");
	int wild = udp6("::", P, 0);
	int bygroup = udp6("ff15::101", P, 0);
	int listen_only = udp6("::", P, 0);
	int no_all = udp6("::", P, 0);
	int other = udp6("ff15::102", P, 0);
	int v4 = udp4("0.0.0.0", P);
	join6("wild IPV6_JOIN_GROUP ff15::101 gx0", wild, "ff15::101", idx);
	E("wild IPV6_JOIN_GROUP again", setsockopt(wild, IPPROTO_IPV6, IPV6_JOIN_GROUP,
	  &(struct ipv6_mreq){ .ipv6mr_multiaddr = addr6("ff15::101", 0).sin6_addr, .ipv6mr_interface = idx },
	  sizeof(struct ipv6_mreq)), -1, EADDRINUSE);
	mcast("bygroup MCAST_JOIN_GROUP ff15::101", bygroup, IPPROTO_IPV6, MCAST_JOIN_GROUP, "ff15::101", NULL);
	join6("other IPV6_JOIN_GROUP ff15::102", other, "ff15::102", idx);
	V("no_all IPV6_MULTICAST_ALL 0", setint(no_all, IPPROTO_IPV6, IPV6_MULTICAST_ALL, 0));
	getint("no_all IPV6_MULTICAST_ALL", no_all, IPPROTO_IPV6, IPV6_MULTICAST_ALL);
	send6("send one", s, "ff15::101", P, "one");
	got("wild", wild, sp);
	got("bygroup", bygroup, sp);
	got("listen_only", listen_only, sp);
	got("no_all", no_all, sp);
	got("other", other, sp);
	got("ipv4 socket", v4, sp);
	send6("send two", s, "ff15::101", P, "two");
	send6("send three", s, "ff15::101", P, "three");
	got("wild", wild, sp);
	got("bygroup", bygroup, sp);
	got("listen_only", listen_only, sp);

	out("-- IPV6_MULTICAST_LOOP off\n");
	E("IPV6_MULTICAST_LOOP 0", setint(s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 0), 0, 0);
	getint("IPV6_MULTICAST_LOOP", s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP);
	send6("send unlooped", s, "ff15::101", P, "unlooped");
	got("wild", wild, sp);
	got("bygroup", bygroup, sp);
	got("listen_only", listen_only, sp);
	E("IPV6_MULTICAST_LOOP 1", setint(s, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 1), 0, 0);

	out("-- leaving\n");
	leave6("wild IPV6_LEAVE_GROUP", wild, "ff15::101", idx);
	E("wild IPV6_LEAVE_GROUP again", setsockopt(wild, IPPROTO_IPV6, IPV6_LEAVE_GROUP,
	  &(struct ipv6_mreq){ .ipv6mr_multiaddr = addr6("ff15::101", 0).sin6_addr, .ipv6mr_interface = idx },
	  sizeof(struct ipv6_mreq)), -1, EADDRNOTAVAIL);
	send6("send after one leave", s, "ff15::101", P, "left1");
	got("wild (IPV6_MULTICAST_ALL, bygroup still joined)", wild, sp);
	got("bygroup", bygroup, sp);
	got("listen_only", listen_only, sp);
	mcast("bygroup MCAST_LEAVE_GROUP", bygroup, IPPROTO_IPV6, MCAST_LEAVE_GROUP, "ff15::101", NULL);
	send6("send after both left", s, "ff15::101", P, "left2");
	got("wild", wild, sp);
	got("bygroup", bygroup, sp);
	got("listen_only", listen_only, sp);
	close(wild);
	close(bygroup);
	close(listen_only);
	close(no_all);
	close(other);
	close(v4);

	out("-- source-specific\n");
	const int Q = 7002;
	int ssm = udp6("::", Q, 0), ssm_other = udp6("::", Q, 0), blk = udp6("::", Q + 1, 0);
	mcast("ssm MCAST_JOIN_SOURCE_GROUP ff15::201 from fd00::1", ssm, IPPROTO_IPV6, MCAST_JOIN_SOURCE_GROUP, "ff15::201", "fd00::1");
	mcast("ssm_other MCAST_JOIN_SOURCE_GROUP ff15::201 from fd00::99", ssm_other, IPPROTO_IPV6, MCAST_JOIN_SOURCE_GROUP, "ff15::201", "fd00::99");
	int s2 = udp6("fd00::2", 0, 0);
	int s2p = port_of(s2);
	V("s2 IPV6_MULTICAST_IF gx0", setint(s2, IPPROTO_IPV6, IPV6_MULTICAST_IF, (int)idx));
	send6("send from fd00::1", s, "ff15::201", Q, "ssm1");
	send6("send from fd00::2", s2, "ff15::201", Q, "ssm2");
	got("ssm (from s)", ssm, sp);
	got("ssm_other", ssm_other, sp);
	mcast("ssm MCAST_LEAVE_SOURCE_GROUP", ssm, IPPROTO_IPV6, MCAST_LEAVE_SOURCE_GROUP, "ff15::201", "fd00::1");
	send6("send after the source leave", s, "ff15::201", Q, "ssm3");
	got("ssm", ssm, sp);
	mcast("blk MCAST_JOIN_GROUP ff15::202", blk, IPPROTO_IPV6, MCAST_JOIN_GROUP, "ff15::202", NULL);
	mcast("blk MCAST_BLOCK_SOURCE fd00::1", blk, IPPROTO_IPV6, MCAST_BLOCK_SOURCE, "ff15::202", "fd00::1");
	send6("send from the blocked source", s, "ff15::202", Q + 1, "blocked");
	send6("send from fd00::2", s2, "ff15::202", Q + 1, "open");
	got("blk (from s2)", blk, s2p);
	mcast("blk MCAST_UNBLOCK_SOURCE fd00::1", blk, IPPROTO_IPV6, MCAST_UNBLOCK_SOURCE, "ff15::202", "fd00::1");
	send6("send again", s, "ff15::202", Q + 1, "unblocked");
	got("blk (from s)", blk, sp);
	close(ssm);
	close(ssm_other);
	close(blk);

	out("-- readiness once the datagram is read (poll, select, epoll)\n");
	{
		const int R = 7005;
		int m = udp6("::", R, 0);
		join6("IPV6_JOIN_GROUP ff15::501 gx0", m, "ff15::501", idx);
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 7 }, evs[4];
		E("epoll_ctl ADD", epoll_ctl(ep, EPOLL_CTL_ADD, m, &ev), 0, 0);
		/* Each round waits for the datagram and looks after the read first with another call:
		 * a look may drop a kernel copy of the datagram the rings brought, so the round's own
		 * call is the only one before the read, and the first after it. */
		static const char *const first[] = { "epoll_wait", "select", "poll" };
		struct pollfd p = { m, POLLIN, 0 };
		char buf[16];
		for (int round = 0; round < 3; round++) {
			out("round %d, %s\n", round, first[round]);
			send6("send", s, "ff15::501", R, "ready");
			for (int k = 0; k < 4; k++) {
				int which = k == 0 ? round : (round + k - 1) % 3;
				const char *when = k == 0 ? "before the read" : "after the read";
				if (k == 1)
					V("recv", recv(m, buf, sizeof buf, MSG_DONTWAIT));
				if (which == 0) {
					int n = epoll_wait(ep, evs, 4, k == 0 ? 300 : 100);
					out("epoll_wait %s = %d", when, n);
					if (n > 0)
						out(" events %#x data %u", evs[0].events, evs[0].data.u32);
					out("\n");
				} else if (which == 1) {
					fd_set rs;
					FD_ZERO(&rs);
					FD_SET(m, &rs);
					struct timeval tv = { 0, k == 0 ? 300000 : 100000 };
					int n = select(m + 1, &rs, NULL, NULL, &tv);
					out("select %s = %d\n", when, n);
				} else {
					p.revents = 0;
					int n = poll(&p, 1, k == 0 ? 300 : 100);
					out("poll %s = %d revents %#x\n", when, n, p.revents);
				}
			}
			V("recv again", recv(m, buf, sizeof buf, MSG_DONTWAIT));
		}
		/* The largest IPv6 datagram (larger than IPv4's largest) to a group. */
		static char big[65528];
		memset(big, 'b', sizeof big);
		struct sockaddr_in6 g = addr6("ff15::501", R);
		V("send 65527 bytes", sendto(s, big, 65527, 0, (struct sockaddr *)&g, sizeof g));
		V("send 65528 bytes", sendto(s, big, 65528, 0, (struct sockaddr *)&g, sizeof g));
		p.revents = 0;
		V("poll", poll(&p, 1, 300));
		V("recv it", recv(m, big, sizeof big, MSG_DONTWAIT));
		V("recv again", recv(m, buf, sizeof buf, MSG_DONTWAIT));
		close(ep);
		close(m);
	}

	out("-- scopes\n");
	const int L = 7004;
	int ll = udp6("::", L, 0);
	struct ipv6_mreq m0 = { .ipv6mr_multiaddr = addr6("ff02::1:5", 0).sin6_addr, .ipv6mr_interface = 0 };
	V("IPV6_JOIN_GROUP ff02::1:5 without an interface", setsockopt(ll, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m0, sizeof m0));
	V("IPV6_LEAVE_GROUP ff02::1:5 without an interface", setsockopt(ll, IPPROTO_IPV6, IPV6_LEAVE_GROUP, &m0, sizeof m0));
	join6("IPV6_JOIN_GROUP ff02::1:5 gx0", ll, "ff02::1:5", idx);
	join6("IPV6_JOIN_GROUP ff01::1:6 gx0", ll, "ff01::1:6", idx);
	send6("send to ff02::1:5", s, "ff02::1:5", L, "link-local");
	got("ll", ll, sp);
	send6("send to ff01::1:6", s, "ff01::1:6", L, "interface-local");
	got("ll", ll, sp);
	{
		/* A link-local source: the member gets its scope id (the interface). */
		int sl = socket(AF_INET6, SOCK_DGRAM, 0);
		struct sockaddr_in6 a = addr6("fe80::1", 0);
		a.sin6_scope_id = idx;
		E("bind fe80::1%gx0", bind(sl, (struct sockaddr *)&a, sizeof a), 0, 0);
		send6("send from fe80::1%gx0 to ff02::1:5", sl, "ff02::1:5", L, "from link-local");
		got("ll", ll, port_of(sl));
		send6("send from fe80::1%gx0 to ff01::1:6", sl, "ff01::1:6", L, "from link-local 2");
		got("ll", ll, port_of(sl));
		close(sl);
	}
	close(ll);

	out("-- lo (its multicast flag on and a multicast route: the kernel still delivers nothing there)\n");
	if (system("ip link set lo multicast on && ip -6 route add multicast ff00::/8 dev lo table local") != 0)
		die("multicast on lo");
	int onlo = udp6("::", L + 1, 0);
	join6("IPV6_JOIN_GROUP ff15::401 lo", onlo, "ff15::401", 1);
	int s3 = udp6("::", 0, 0);
	int s3p = port_of(s3);
	V("s3 IPV6_MULTICAST_IF lo", setint(s3, IPPROTO_IPV6, IPV6_MULTICAST_IF, 1));
	send6("send through lo", s3, "ff15::401", L + 1, "lo");
	got("onlo", onlo, s3p);
	close(onlo);
	close(s3);

	out("-- IPv4 groups on dual-stack sockets\n");
	const int D = 7003;
	int dual = udp6("::", D, 0), only6 = udp6("::", D, 1), both = udp6("::", D + 1, 0);
	join4("dual IP_ADD_MEMBERSHIP 239.1.2.3 gx0", dual, "239.1.2.3");
	join4("only6 IP_ADD_MEMBERSHIP 239.1.2.3 gx0", only6, "239.1.2.3");
	int s4 = udp4("10.9.0.1", 0);
	int s4p = port_of(s4);
	struct ip_mreqn mif = { .imr_ifindex = (int)idx };
	V("s4 IP_MULTICAST_IF gx0", setsockopt(s4, IPPROTO_IP, IP_MULTICAST_IF, &mif, sizeof mif));
	send4("IPv4 send to 239.1.2.3", s4, "239.1.2.3", D, "v4group");
	got("dual", dual, s4p);
	got("only6", only6, s4p);
	int sd = udp6("::", 0, 0);
	int sdp = port_of(sd);
	V("sd IP_MULTICAST_IF gx0", setsockopt(sd, IPPROTO_IP, IP_MULTICAST_IF, &mif, sizeof mif));
	send6("dual-stack send to ::ffff:239.1.2.3", sd, "::ffff:239.1.2.3", D, "mapped");
	got("dual", dual, sdp);
	send4("dual-stack send with a sockaddr_in to 239.1.2.3", sd, "239.1.2.3", D, "sockaddr_in");
	got("dual", dual, sdp);
	/* A dual-stack socket's IPv4 group datagrams loop back as IPV6_MULTICAST_LOOP says
	 * (sk_mc_loop goes by the socket's family), whatever IP_MULTICAST_LOOP says. */
	V("sd IPV6_MULTICAST_LOOP 0", setint(sd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 0));
	send6("dual-stack send, IPV6_MULTICAST_LOOP 0", sd, "::ffff:239.1.2.3", D, "loop6off");
	got("dual", dual, sdp);
	V("sd IPV6_MULTICAST_LOOP 1", setint(sd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 1));
	V("sd IP_MULTICAST_LOOP 0", setint(sd, IPPROTO_IP, IP_MULTICAST_LOOP, 0));
	send6("dual-stack send, IP_MULTICAST_LOOP 0", sd, "::ffff:239.1.2.3", D, "loop4off");
	got("dual", dual, sdp);
	mcast("both MCAST_JOIN_GROUP (SOL_IP) 239.1.2.4", both, IPPROTO_IP, MCAST_JOIN_GROUP, "239.1.2.4", NULL);
	join6("both IPV6_JOIN_GROUP ff15::301", both, "ff15::301", idx);
	send4("IPv4 send to 239.1.2.4", s4, "239.1.2.4", D + 1, "from4");
	got("both", both, s4p);
	send6("IPv6 send to ff15::301", s, "ff15::301", D + 1, "from6");
	got("both", both, sp);
	V("dual IP_DROP_MEMBERSHIP", setsockopt(dual, IPPROTO_IP, IP_DROP_MEMBERSHIP,
	  &(struct ip_mreqn){ .imr_multiaddr.s_addr = inet_addr("239.1.2.3"), .imr_ifindex = (int)idx }, sizeof(struct ip_mreqn)));
	send4("IPv4 send after the drop", s4, "239.1.2.3", D, "dropped");
	got("dual (only6 still joined)", dual, s4p);
	close(dual);
	close(only6);
	close(both);
	close(s4);
	close(sd);
	close(s);
	close(s2);
	return finish();
}

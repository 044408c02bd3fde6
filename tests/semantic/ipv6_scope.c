/* Link-local IPv6 and scope ids, in a network namespace this program makes (a veth interface
 * with fe80::1): TCP and UDP bound to fe80::1%gx0, the scope id from getsockname, getpeername,
 * accept and recvfrom, and the kernel's EINVAL for a link-local TCP address without one (a UDP
 * socket bound to a link-local address sends with its interface's).
 * Without the privilege to make a namespace it prints "skipped" (in both runs). */
#include "common.h"

#include <net/if.h>
#include <sched.h>

static struct sockaddr_in6 ll(const char *ip, int port, unsigned scope)
{
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof a);
	a.sin6_family = AF_INET6;
	inet_pton(AF_INET6, ip, &a.sin6_addr);
	a.sin6_port = htons((uint16_t)port);
	a.sin6_scope_id = scope;
	return a;
}

static unsigned idx;

/* show prints an address; the scope id as "gx0" when it is the interface's index. */
static void show6(const char *label, const struct sockaddr_in6 *a, socklen_t l)
{
	char ip[64];
	inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
	if (a->sin6_scope_id == idx)
		out("%s: len %u family %d %s flow %u scope gx0\n", label, l, a->sin6_family, ip, a->sin6_flowinfo);
	else
		out("%s: len %u family %d %s flow %u scope %u\n", label, l, a->sin6_family, ip, a->sin6_flowinfo,
		    a->sin6_scope_id);
}

static int port6(int fd)
{
	struct sockaddr_in6 a;
	socklen_t l = sizeof a;
	getsockname(fd, (struct sockaddr *)&a, &l);
	return ntohs(a.sin6_port);
}

int main(void)
{
	if (unshare(CLONE_NEWNET) != 0 ||
	    system("ip link set lo up && ip link add gx0 type veth peer name gx1 && ip link set gx1 up && ip link set gx0 up && "
		   "ip addr add fe80::1/64 dev gx0 nodad && ip addr add fe80::2/64 dev gx0 nodad") != 0 ||
	    (idx = if_nametoindex("gx0")) == 0) {
		out("no namespace of our own here: skipped\n");
		return finish();
	}
	char buf[64];
	struct sockaddr_in6 a, from;
	socklen_t fl;

	out("-- tcp on fe80::1%%gx0\n");
	int l = socket(AF_INET6, SOCK_STREAM, 0);
	a = ll("fe80::1", 0, 0);
	E("bind fe80::1 without a scope id", bind(l, (struct sockaddr *)&a, sizeof a), -1, EINVAL);
	a = ll("fe80::1", 0, idx);
	E("bind fe80::1%gx0", bind(l, (struct sockaddr *)&a, sizeof a), 0, 0);
	E("listen", listen(l, 4), 0, 0);
	fl = sizeof from;
	getsockname(l, (struct sockaddr *)&from, &fl);
	show6("listener getsockname", &from, fl);
	int c = socket(AF_INET6, SOCK_STREAM, 0);
	a = ll("fe80::1", port6(l), 0);
	E("connect without a scope id", connect(c, (struct sockaddr *)&a, sizeof a), -1, EINVAL);
	close(c);
	c = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 me = ll("fe80::2", 0, idx);
	E("bind client fe80::2%gx0", bind(c, (struct sockaddr *)&me, sizeof me), 0, 0);
	a = ll("fe80::1", port6(l), idx);
	E("connect fe80::1%gx0", connect(c, (struct sockaddr *)&a, sizeof a), 0, 0);
	fl = sizeof from;
	int s = (int)OK("accept", accept(l, (struct sockaddr *)&from, &fl));
	show6("accept peer", &from, fl);
	fl = sizeof from;
	getpeername(c, (struct sockaddr *)&from, &fl);
	show6("client getpeername", &from, fl);
	fl = sizeof from;
	getsockname(s, (struct sockaddr *)&from, &fl);
	show6("server getsockname", &from, fl);
	static unsigned char tx[200000], rx[200000];
	fill(tx, sizeof tx, 3);
	CHECK("client sends", send_all(c, tx, sizeof tx) == 0);
	CHECK("server receives intact", recv_all(s, rx, sizeof rx) == (long)sizeof rx && verify(rx, sizeof rx, 3));
	int ok = 1;
	for (int i = 0; i < 100 && ok; i++) {
		char b = (char)i, r = 0;
		ok = send(s, &b, 1, 0) == 1 && recv(c, &r, 1, 0) == 1 && r == b && send(c, &r, 1, 0) == 1 &&
		     recv(s, &r, 1, 0) == 1 && r == b;
	}
	CHECK("ping-pong", ok);
	close(c);
	close(s);
	close(l);

	out("-- udp on fe80::1%%gx0\n");
	int r = socket(AF_INET6, SOCK_DGRAM, 0);
	a = ll("fe80::1", 0, idx);
	E("bind fe80::1%gx0", bind(r, (struct sockaddr *)&a, sizeof a), 0, 0);
	int u = socket(AF_INET6, SOCK_DGRAM, 0);
	E("bind fe80::2%gx0", bind(u, (struct sockaddr *)&me, sizeof me), 0, 0);
	a = ll("fe80::1", port6(r), 0);
	E("sendto without a scope id (the bound interface's)", sendto(u, "x", 1, 0, (struct sockaddr *)&a, sizeof a), 1, 0);
	a = ll("fe80::1", port6(r), idx);
	E("sendto fe80::1%gx0", sendto(u, "link", 4, 0, (struct sockaddr *)&a, sizeof a), 4, 0);
	wait_readable(r, 1000);
	fl = sizeof from;
	E("recvfrom", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 1, 0);
	show6("recvfrom source", &from, fl);
	wait_readable(r, 1000);
	fl = sizeof from;
	E("recvfrom", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 4, 0);
	show6("recvfrom source", &from, fl);
	E("reply", sendto(r, "back", 4, 0, (struct sockaddr *)&from, fl), 4, 0);
	wait_readable(u, 1000);
	fl = sizeof from;
	E("recvfrom", recvfrom(u, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 4, 0);
	show6("reply source", &from, fl);
	close(r);
	close(u);
	return finish();
}

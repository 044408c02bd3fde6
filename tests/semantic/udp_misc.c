/* UDP details: the largest datagram (65507) and EMSGSIZE beyond, order of a burst of 200 datagrams,
 * receive-buffer overflow drops, SO_BROADCAST rules, SO_REUSEADDR/SO_REUSEPORT sharing, sendto with a
 * wrong family, wildcard receivers, multicast on loopback. */
#include "common.h"

int main(void)
{
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r);
	static unsigned char big[70000], rb[70000];
	fill(big, sizeof big, 0);

	out("-- sizes\n");
	int sb = 1 << 20;
	setsockopt(r, SOL_SOCKET, SO_RCVBUF, &sb, sizeof sb);
	E("send 65507", udp_send_to(s, big, 65507, rp), 65507, 0);
	E("send 65508", udp_send_to(s, big, 65508, rp), -1, EMSGSIZE);
	wait_readable(r, 1000);
	E("recv 65507", recv(r, rb, sizeof rb, 0), 65507, 0);
	CHECK("intact", verify(rb, 65507, 0));
	E("send 9000", udp_send_to(s, big, 9000, rp), 9000, 0);
	wait_readable(r, 1000);
	E("recv 9000", recv(r, rb, sizeof rb, 0), 9000, 0);

	out("-- a burst keeps its order\n");
	for (int i = 0; i < 200; i++) {
		unsigned char m[4] = { (unsigned char)i, (unsigned char)(i >> 8), 0x5a, 0xa5 };
		udp_send_to(s, m, 4, rp);
	}
	int inorder = 0, got = 0;
	for (int i = 0; i < 200; i++) {
		if (!wait_readable(r, 1000))
			break;
		unsigned char m[8];
		if (recv(r, m, sizeof m, 0) != 4)
			break;
		got++;
		if (m[0] == (unsigned char)i && m[1] == (unsigned char)(i >> 8))
			inorder++;
	}
	out("received %d, in order %d\n", got, inorder);

	out("-- receive buffer overflow drops\n");
	int o = udp_bound(0);
	int small = 4096;
	setsockopt(o, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
	int sent = 0;
	for (int i = 0; i < 100; i++)
		if (udp_send_to(s, big, 1000, port_of(o)) == 1000)
			sent++;
	out("sent = %d (sendto does not fail for a full receiver)\n", sent);
	msleep(20);
	fcntl(o, F_SETFL, O_NONBLOCK);
	int delivered = 0;
	while (recv(o, rb, sizeof rb, 0) > 0)
		delivered++;
	out("some delivered = %s, some dropped = %s\n", yesno(delivered > 0), yesno(delivered < 100));
	close(o);

	out("-- broadcast\n");
	struct sockaddr_in bc = lo_addr(rp);
	bc.sin_addr.s_addr = inet_addr("255.255.255.255");
	E("sendto 255.255.255.255 without SO_BROADCAST", sendto(s, "b", 1, 0, (struct sockaddr *)&bc, sizeof bc), -1, EACCES);

	out("-- sharing a port\n");
	int one = 1;
	int a1 = socket(AF_INET, SOCK_DGRAM, 0), a2 = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(a1, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	setsockopt(a2, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in z = lo_addr(0);
	bind(a1, (struct sockaddr *)&z, sizeof z);
	struct sockaddr_in same = lo_addr(port_of(a1));
	E("second bind with SO_REUSEADDR", bind(a2, (struct sockaddr *)&same, sizeof same), 0, 0);
	udp_send_to(s, "shared", 6, port_of(a1));
	msleep(20);
	long n1 = recv(a1, rb, sizeof rb, MSG_DONTWAIT), n2 = recv(a2, rb, sizeof rb, MSG_DONTWAIT);
	out("delivered to exactly one = %s, to the last bound = %s\n", yesno((n1 == 6) != (n2 == 6)), yesno(n2 == 6));
	close(a1);
	close(a2);

	out("-- wildcard receiver\n");
	int w = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in any;
	memset(&any, 0, sizeof any);
	any.sin_family = AF_INET;
	bind(w, (struct sockaddr *)&any, sizeof any);
	struct sockaddr_in to2 = lo_addr(port_of(w));
	to2.sin_addr.s_addr = inet_addr("127.0.0.2");
	E("send to 127.0.0.2", sendto(s, "two", 3, 0, (struct sockaddr *)&to2, sizeof to2), 3, 0);
	E("send to 127.0.0.1", udp_send_to(s, "one", 3, port_of(w)), 3, 0);
	wait_readable(w, 1000);
	msleep(20);
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	long n = E("recv", recvfrom(w, rb, sizeof rb, 0, (struct sockaddr *)&from, &fl), 3, 0);
	show("data", rb, n);
	n = E("recv", recv(w, rb, sizeof rb, 0), 3, 0);
	show("data", rb, n);
	close(w);

	out("-- wrong family\n");
	struct sockaddr_in6 a6;
	memset(&a6, 0, sizeof a6);
	a6.sin6_family = AF_INET6;
	E("sendto an AF_INET6 address", sendto(s, "x", 1, 0, (struct sockaddr *)&a6, sizeof a6), -1, EAFNOSUPPORT);
	struct sockaddr un = { .sa_family = AF_UNSPEC };
	V("sendto AF_UNSPEC address", sendto(s, "x", 1, 0, &un, sizeof(struct sockaddr_in)));

	out("-- multicast on loopback\n");
	int m = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(m, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	bind(m, (struct sockaddr *)&any, sizeof any);
	struct ip_mreq mr;
	mr.imr_multiaddr.s_addr = inet_addr("239.1.2.3");
	mr.imr_interface.s_addr = htonl(INADDR_LOOPBACK);
	long jr = V("IP_ADD_MEMBERSHIP on lo", setsockopt(m, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr));
	E("IP_ADD_MEMBERSHIP twice", setsockopt(m, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr), -1, jr == 0 ? EADDRINUSE : errno);
	struct in_addr ifa = { htonl(INADDR_LOOPBACK) };
	V("IP_MULTICAST_IF lo", setsockopt(s, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof ifa));
	struct sockaddr_in g = lo_addr(port_of(m));
	g.sin_addr = mr.imr_multiaddr;
	V("send to the group", sendto(s, "group", 5, 0, (struct sockaddr *)&g, sizeof g));
	msleep(50);
	V("recv from the group", recv(m, rb, sizeof rb, MSG_DONTWAIT));
	V("IP_DROP_MEMBERSHIP", setsockopt(m, IPPROTO_IP, IP_DROP_MEMBERSHIP, &mr, sizeof mr));
	E("IP_DROP_MEMBERSHIP again", setsockopt(m, IPPROTO_IP, IP_DROP_MEMBERSHIP, &mr, sizeof mr), -1, EADDRNOTAVAIL);
	close(m);
	close(r);
	close(s);
	return finish();
}

/* Connected UDP: only datagrams from the connected peer are delivered, send without an address goes
 * to the peer, sendto may name another address, connect(AF_UNSPEC) dissolves the association, an
 * unconnected send without address is EDESTADDRREQ, and an ICMP port-unreachable surfaces as
 * ECONNREFUSED on a connected socket only. */
#include "common.h"

int main(void)
{
	char buf[64];
	int a = udp_bound(0), b = udp_bound(0), c = udp_bound(0);
	int ap = port_of(a), bp = port_of(b), cp = port_of(c);

	E("send unconnected", send(a, "x", 1, 0), -1, EDESTADDRREQ);
	E("getpeername unconnected", getpeername(a, (struct sockaddr *)&(struct sockaddr_in){ 0 },
					       &(socklen_t){ sizeof(struct sockaddr_in) }), -1, ENOTCONN);
	E("connect a->b", udp_connect_to(a, bp), 0, 0);
	CHECK("getpeername is b", peer_port_of(a) == bp);
	E("c sends to a (filtered)", udp_send_to(c, "from-c", 6, ap), 6, 0);
	E("b sends to a", udp_send_to(b, "from-b", 6, ap), 6, 0);
	wait_readable(a, 2000);
	msleep(20);
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	long n = E("a recvfrom", recvfrom(a, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 6, 0);
	show("data", buf, n);
	CHECK("source is b", ntohs(from.sin_port) == bp);
	E("a recv again", recv(a, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);

	E("a send to peer", send(a, "to-b", 4, 0), 4, 0);
	wait_readable(b, 2000);
	n = E("b recv", recv(b, buf, sizeof buf, 0), 4, 0);
	show("data", buf, n);
	E("a sendto c explicitly", udp_send_to(a, "to-c", 4, cp), 4, 0);
	wait_readable(c, 2000);
	n = E("c recv", recv(c, buf, sizeof buf, MSG_DONTWAIT), 4, 0);
	show("data", buf, n);
	E("a write to peer", write(a, "w", 1), 1, 0);
	wait_readable(b, 2000);
	E("b recv", recv(b, buf, sizeof buf, 0), 1, 0);

	out("-- reconnect to c\n");
	E("connect a->c", udp_connect_to(a, cp), 0, 0);
	E("b sends to a (filtered now)", udp_send_to(b, "b2", 2, ap), 2, 0);
	E("c sends to a", udp_send_to(c, "c2", 2, ap), 2, 0);
	wait_readable(a, 2000);
	msleep(20);
	n = E("a recv", recv(a, buf, sizeof buf, 0), 2, 0);
	show("data", buf, n);
	E("a recv again", recv(a, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);

	out("-- disconnect releases a kernel-chosen port\n");
	struct sockaddr unspec;
	memset(&unspec, 0, sizeof unspec);
	unspec.sa_family = AF_UNSPEC;
	E("connect AF_UNSPEC", connect(a, &unspec, sizeof unspec), 0, 0);
	E("getpeername", getpeername(a, (struct sockaddr *)&from, &fl), -1, ENOTCONN);
	out("local port is now 0 = %s\n", yesno(port_of(a) == 0));

	out("-- disconnect keeps an explicitly bound port\n");
	int tmp = udp_bound(0);
	int ep = port_of(tmp);
	close(tmp);
	int d = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in ea = lo_addr(ep);
	E("bind explicit port", bind(d, (struct sockaddr *)&ea, sizeof ea), 0, 0);
	E("connect d->c", udp_connect_to(d, cp), 0, 0);
	E("b sends to d (filtered)", udp_send_to(b, "b3", 2, ep), 2, 0);
	E("connect AF_UNSPEC", connect(d, &unspec, sizeof unspec), 0, 0);
	CHECK("local port kept", port_of(d) == ep);
	E("b sends to d", udp_send_to(b, "b4", 2, ep), 2, 0);
	wait_readable(d, 2000);
	n = E("d recv", recv(d, buf, sizeof buf, MSG_DONTWAIT), 2, 0);
	show("data", buf, n);
	E("d recv again", recv(d, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	E("send after disconnect", send(d, "x", 1, 0), -1, EDESTADDRREQ);
	close(d);

	out("-- port unreachable\n");
	int dead = udp_bound(0);
	int dp = port_of(dead);
	close(dead);
	E("unconnected sendto dead port", udp_send_to(b, "x", 1, dp), 1, 0);
	msleep(50);
	E("unconnected recv sees no error", recv(b, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	E("connect b->dead", udp_connect_to(b, dp), 0, 0);
	E("send to dead port", send(b, "x", 1, 0), 1, 0);
	wait_readable(b, 2000);
	out("poll = %s\n", pollbits(poll1(b, POLLIN | POLLOUT, 0)));
	int err = -1;
	socklen_t el = sizeof err;
	E("getsockopt SO_ERROR", getsockopt(b, SOL_SOCKET, SO_ERROR, &err, &el), 0, 0);
	out("SO_ERROR = %s\n", ename(err));
	E("recv after error was read", recv(b, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	E("send to dead port again", send(b, "x", 1, 0), 1, 0);
	wait_readable(b, 2000);
	E("recv reports the error", recv(b, buf, sizeof buf, 0), -1, ECONNREFUSED);
	E("recv once only", recv(b, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	E("send to dead port third", send(b, "x", 1, 0), 1, 0);
	msleep(50);
	E("next send reports it", send(b, "x", 1, 0), -1, ECONNREFUSED);
	close(a);
	close(b);
	close(c);
	return finish();
}

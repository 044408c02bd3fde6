/* accept and accept4: SOCK_NONBLOCK|SOCK_CLOEXEC on the new socket, the peer address and its length,
 * NULL address arguments, backlog order, errors (invalid flags, not listening, UDP, bad fd). */
#include "common.h"

int main(void)
{
	int l = tcp_listener(0);
	int lp = port_of(l);
	int c1 = tcp_connect_port(lp);
	int c2 = tcp_connect_port(lp);
	int c3 = tcp_connect_port(lp);

	out("-- accept4 flags\n");
	struct sockaddr_in pa;
	socklen_t pl = sizeof pa;
	int a1 = (int)OK("accept4 NONBLOCK|CLOEXEC", accept4(l, (struct sockaddr *)&pa, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC));
	out("nonblocking = %s, cloexec = %s\n", yesno(fcntl(a1, F_GETFL) & O_NONBLOCK), yesno(fcntl(a1, F_GETFD) & FD_CLOEXEC));
	out("peer len = %u, first in backlog = %s\n", pl, yesno(ntohs(pa.sin_port) == port_of(c1)));
	char b;
	E("recv on nonblocking accepted", recv(a1, &b, 1, 0), -1, EAGAIN);
	int a2 = (int)OK("accept4 no flags, NULL addr", accept4(l, NULL, NULL, 0));
	out("nonblocking = %s, cloexec = %s\n", yesno(fcntl(a2, F_GETFL) & O_NONBLOCK), yesno(fcntl(a2, F_GETFD) & FD_CLOEXEC));
	CHECK("second in backlog", peer_port_of(a2) == port_of(c2));
	E("accept4 bad flags", accept4(l, NULL, NULL, 0x7), -1, EINVAL);
	unsigned char small[4];
	memset(small, 0xcd, sizeof small);
	pl = sizeof small;
	int a3 = (int)OK("accept with a 4-byte address buffer", accept(l, (struct sockaddr *)small, &pl));
	out("len = %u (full size), family in buffer = %s\n", pl, yesno(small[0] == AF_INET));
	CHECK("third in backlog", peer_port_of(a3) == port_of(c3));

	out("-- data both ways\n");
	E("send on accepted", send(a3, "srv", 3, 0), 3, 0);
	char buf[8];
	E("recv on client", recv_all(c3, buf, 3), 3, 0);
	E("send on client", send(c1, "cli", 3, 0), 3, 0);
	wait_readable(a1, 1000);
	E("recv on accepted", recv(a1, buf, sizeof buf, 0), 3, 0);

	out("-- errors\n");
	int t = socket(AF_INET, SOCK_STREAM, 0);
	E("accept on unbound socket", accept(t, NULL, NULL), -1, EINVAL);
	struct sockaddr_in ba = lo_addr(0);
	bind(t, (struct sockaddr *)&ba, sizeof ba);
	E("accept on bound, not listening", accept(t, NULL, NULL), -1, EINVAL);
	E("accept on connected socket", accept(c1, NULL, NULL), -1, EINVAL);
	int u = udp_bound(0);
	E("accept on udp", accept(u, NULL, NULL), -1, EOPNOTSUPP);
	E("listen on udp", listen(u, 5), -1, EOPNOTSUPP);
	E("accept -1", accept(-1, NULL, NULL), -1, EBADF);
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe");
	E("accept on pipe", accept(pp[0], NULL, NULL), -1, ENOTSOCK);
	pl = (socklen_t)-1;
	int c4 = tcp_connect_port(lp);
	wait_readable(l, 1000);
	E("accept negative addrlen", accept(l, (struct sockaddr *)&pa, &pl), -1, EINVAL);
	fcntl(l, F_SETFL, O_NONBLOCK);
	E("the kernel consumed that connection", accept(l, NULL, NULL), -1, EAGAIN);
	fcntl(l, F_SETFL, 0);
	wait_readable(c4, 1000);
	E("its client sees EOF", recv(c4, buf, sizeof buf, 0), 0, 0);

	out("-- listen twice, backlog change, listen after connect\n");
	E("listen again", listen(l, 1), 0, 0);
	E("listen on connected", listen(c1, 5), -1, EINVAL);
	int fresh = socket(AF_INET, SOCK_STREAM, 0);
	E("listen on unbound (autobind)", listen(fresh, 5), 0, 0);
	CHECK("got a port", port_of(fresh) != 0);
	int c5 = tcp_connect_port(port_of(fresh));
	int a5 = (int)OK("accept on autobound listener", accept(fresh, NULL, NULL));
	close(a5);
	close(c5);
	close(fresh);
	close(a1);
	close(a2);
	close(a3);
	close(c1);
	close(c2);
	close(c3);
	close(c4);
	close(l);
	return finish();
}

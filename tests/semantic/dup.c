/* dup, dup2, dup3 and fcntl F_DUPFD of sockets: the copy shares the open file (data, O_NONBLOCK,
 * options, address), not FD_CLOEXEC; closing the original leaves the copy working; dup2 onto an open
 * socket closes that socket first. */
#include "common.h"

int main(void)
{
	char buf[64];
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r);

	out("-- dup\n");
	int d = (int)OK("dup", dup(r));
	CHECK("dup has the same address", port_of(d) == rp);
	udp_send_to(s, "one", 3, rp);
	wait_readable(d, 1000);
	E("recv on dup", recv(d, buf, sizeof buf, 0), 3, 0);
	E("recv on original", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	udp_send_to(s, "two", 3, rp);
	E("close original", close(r), 0, 0);
	wait_readable(d, 1000);
	long n = E("recv on dup after close", recv(d, buf, sizeof buf, 0), 3, 0);
	show("data", buf, n);
	E("recv on closed original", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EBADF);
	E("send on dup", udp_send_to(d, "x", 1, port_of(s)), 1, 0);
	wait_readable(s, 1000);
	E("recv from dup", recv(s, buf, sizeof buf, 0), 1, 0);

	out("-- shared file status flags, private fd flags\n");
	int d2 = (int)OK("fcntl F_DUPFD_CLOEXEC", fcntl(d, F_DUPFD_CLOEXEC, 0));
	out("copy cloexec = %s, original cloexec = %s\n", yesno(fcntl(d2, F_GETFD) & FD_CLOEXEC),
	    yesno(fcntl(d, F_GETFD) & FD_CLOEXEC));
	fcntl(d2, F_SETFL, O_NONBLOCK);
	out("O_NONBLOCK set on copy shows on original = %s\n", yesno(fcntl(d, F_GETFL) & O_NONBLOCK));
	E("recv on original now nonblocking", recv(d, buf, sizeof buf, 0), -1, EAGAIN);
	fcntl(d, F_SETFL, 0);
	int big = 200000, got = 0;
	socklen_t gl = sizeof got;
	setsockopt(d2, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	getsockopt(d, SOL_SOCKET, SO_RCVBUF, &got, &gl);
	out("SO_RCVBUF set on copy seen on original = %d\n", got);
	close(d2);

	out("-- F_DUPFD with a minimum\n");
	int d3 = (int)OK("fcntl F_DUPFD 100", fcntl(d, F_DUPFD, 100));
	CHECK("copy fd >= 100", d3 >= 100);
	out("copy cloexec = %s\n", yesno(fcntl(d3, F_GETFD) & FD_CLOEXEC));
	udp_send_to(s, "three", 5, port_of(d3));
	wait_readable(d3, 1000);
	E("recv on high copy", recv(d3, buf, sizeof buf, 0), 5, 0);
	close(d3);

	out("-- dup2 and dup3\n");
	int t = udp_bound(0);
	int tp = port_of(t);
	E("dup2 same fd returns it", dup2(d, d) == d, 1, 0);
	E("dup3 same fd", dup3(d, d, 0), -1, EINVAL);
	E("dup3 bad flags", dup3(d, t, 12345), -1, EINVAL);
	E("dup2 onto an open socket", dup2(d, t) == t, 1, 0);
	CHECK("target now has the source's address", port_of(t) == port_of(d));
	E("old target's port is free again (send there is lost)", udp_send_to(s, "lost", 4, tp), 4, 0);
	int again = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in ta = lo_addr(tp);
	E("bind to the old target's port", bind(again, (struct sockaddr *)&ta, sizeof ta), 0, 0);
	close(again);
	udp_send_to(s, "four", 4, port_of(t));
	wait_readable(t, 1000);
	E("recv on dup2 target", recv(t, buf, sizeof buf, 0), 4, 0);
	int u = udp_bound(0);
	E("dup3 cloexec", dup3(d, u, O_CLOEXEC) == u, 1, 0);
	out("dup3 target cloexec = %s\n", yesno(fcntl(u, F_GETFD) & FD_CLOEXEC));
	int closed = dup(d);
	close(closed);
	E("dup2 from closed fd", dup2(closed, u), -1, EBADF);
	CHECK("target of failed dup2 still open", fcntl(u, F_GETFD) >= 0);
	close(u);
	close(t);

	out("-- tcp dup\n");
	int c, a;
	tcp_pair(&c, &a);
	int ad = dup(a);
	close(a);
	E("send to accepted via client", send(c, "hello", 5, 0), 5, 0);
	n = E("recv on dup of accepted", recv_all(ad, buf, 5), 5, 0);
	show("data", buf, n);
	E("send on dup", send(ad, "back", 4, 0), 4, 0);
	E("recv on client", recv_all(c, buf, 4), 4, 0);
	int cd = dup(c);
	E("shutdown via dup", shutdown(cd, SHUT_WR), 0, 0);
	E("recv EOF on peer", recv(ad, buf, sizeof buf, 0), 0, 0);
	E("send on original after shutdown via dup", send(c, "x", 1, MSG_NOSIGNAL), -1, EPIPE);
	close(cd);
	close(c);
	close(ad);

	out("-- errors\n");
	E("dup -1", dup(-1), -1, EBADF);
	E("dup2 to -1", dup2(d, -1), -1, EBADF);
	E("F_DUPFD negative min", fcntl(d, F_DUPFD, -1), -1, EINVAL);
	close(d);
	close(s);
	return finish();
}

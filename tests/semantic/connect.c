/* TCP connect: refused (blocking and non-blocking), non-blocking connect in progress then POLLOUT and
 * SO_ERROR, EISCONN on a second connect, epoll reporting completion, connect on a listener. */
#include "common.h"
#include <sys/epoll.h>

static int dead_port(void)
{
	int l = tcp_listener(0);
	int p = port_of(l);
	close(l);
	return p;
}

static int so_error(int fd)
{
	int err = -1;
	socklen_t l = sizeof err;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
		die("getsockopt SO_ERROR");
	return err;
}

int main(void)
{
	out("-- blocking, refused\n");
	int dp = dead_port();
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = lo_addr(dp);
	E("connect", connect(fd, (struct sockaddr *)&a, sizeof a), -1, ECONNREFUSED);
	out("SO_ERROR after = %s\n", ename(so_error(fd)));
	E("getpeername", getpeername(fd, (struct sockaddr *)&a, &(socklen_t){ sizeof a }), -1, ENOTCONN);
	char b;
	E("recv", recv(fd, &b, 1, 0), -1, ENOTCONN);
	E("send", send(fd, "x", 1, MSG_NOSIGNAL), -1, EPIPE);
	close(fd);

	out("-- non-blocking, refused\n");
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	a = lo_addr(dp);
	E("connect", connect(fd, (struct sockaddr *)&a, sizeof a), -1, EINPROGRESS);
	out("poll = %s\n", pollbits(poll1(fd, POLLOUT, 2000)));
	out("SO_ERROR = %s\n", ename(so_error(fd)));
	out("SO_ERROR again = %s\n", ename(so_error(fd)));
	close(fd);

	out("-- non-blocking, accepted\n");
	int l = tcp_listener(0);
	int lp = port_of(l);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	a = lo_addr(lp);
	E("connect", connect(fd, (struct sockaddr *)&a, sizeof a), -1, EINPROGRESS);
	out("poll = %s\n", pollbits(poll1(fd, POLLOUT, 2000)));
	out("SO_ERROR = %s\n", ename(so_error(fd)));
	E("connect again completes", connect(fd, (struct sockaddr *)&a, sizeof a), 0, 0);
	E("connect third time", connect(fd, (struct sockaddr *)&a, sizeof a), -1, EISCONN);
	CHECK("getpeername is listener", peer_port_of(fd) == lp);
	int s = (int)OK("accept", accept(l, NULL, NULL));
	CHECK("accepted peer is our local port", peer_port_of(s) == port_of(fd));
	E("send", send(fd, "hi", 2, 0), 2, 0);
	char buf[8];
	E("recv", recv_all(s, buf, 2), 2, 0);
	close(fd);
	close(s);

	out("-- non-blocking, epoll reports completion\n");
	int ep = epoll_create1(0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN, .data.u64 = 42 };
	E("epoll_ctl add before connect", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0, 0);
	struct epoll_event evs[4];
	int n = epoll_wait(ep, evs, 4, 0);
	out("events before connect = %d mask %s\n", n, n > 0 ? pollbits((int)evs[0].events) : "-");
	E("connect", connect(fd, (struct sockaddr *)&a, sizeof a), -1, EINPROGRESS);
	n = (int)E("epoll_wait", epoll_wait(ep, evs, 4, 2000), 1, 0);
	if (n == 1)
		out("data %llu events %s\n", (unsigned long long)evs[0].data.u64, pollbits((int)evs[0].events));
	out("SO_ERROR = %s\n", ename(so_error(fd)));
	s = accept(l, NULL, NULL);
	close(s);
	close(fd);

	out("-- non-blocking to a dead port, epoll\n");
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ev.events = EPOLLOUT;
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	a = lo_addr(dp);
	E("connect", connect(fd, (struct sockaddr *)&a, sizeof a), -1, EINPROGRESS);
	n = (int)E("epoll_wait", epoll_wait(ep, evs, 4, 2000), 1, 0);
	if (n == 1)
		out("events %s\n", pollbits((int)evs[0].events));
	out("SO_ERROR = %s\n", ename(so_error(fd)));
	close(fd);
	close(ep);

	out("-- misuse\n");
	E("connect on a listener", connect(l, (struct sockaddr *)&a, sizeof a), -1, EISCONN);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in6 a6;
	memset(&a6, 0, sizeof a6);
	a6.sin6_family = AF_INET6;
	E("connect AF_INET6 address on AF_INET socket", connect(fd, (struct sockaddr *)&a6, sizeof a6), -1, EAFNOSUPPORT);
	E("connect short addrlen", connect(fd, (struct sockaddr *)&a, 4), -1, EINVAL);
	close(fd);
	close(l);
	return finish();
}

/* AF_UNIX sockets and socketpairs are not offloaded but must work untouched next to offloaded ones:
 * stream and datagram pairs, a named listener, epoll and poll over unix and UDP sockets together. */
#include "common.h"
#include <sys/epoll.h>
#include <sys/un.h>

int main(void)
{
	char buf[64];
	int sp[2];
	out("-- socketpair stream\n");
	E("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0, 0);
	E("send", send(sp[0], "pair", 4, 0), 4, 0);
	E("recv", recv(sp[1], buf, sizeof buf, 0), 4, 0);
	E("shutdown", shutdown(sp[0], SHUT_WR), 0, 0);
	E("recv EOF", recv(sp[1], buf, sizeof buf, 0), 0, 0);
	close(sp[0]);
	close(sp[1]);

	out("-- socketpair datagram\n");
	E("socketpair", socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, sp), 0, 0);
	E("send 10", send(sp[0], buf, 10, 0), 10, 0);
	E("recv 4 of 10 with MSG_TRUNC", recv(sp[1], buf, 4, MSG_TRUNC), 10, 0);
	E("recv empty", recv(sp[1], buf, sizeof buf, 0), -1, EAGAIN);

	out("-- named listener\n");
	char path[108];
	snprintf(path, sizeof path, "/tmp/goxio-unix-%d", getpid());
	unlink(path);
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un ua;
	memset(&ua, 0, sizeof ua);
	ua.sun_family = AF_UNIX;
	strcpy(ua.sun_path, path);
	E("bind", bind(l, (struct sockaddr *)&ua, sizeof ua), 0, 0);
	E("listen", listen(l, 4), 0, 0);
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	E("connect", connect(c, (struct sockaddr *)&ua, sizeof ua), 0, 0);
	int a = (int)OK("accept", accept(l, NULL, NULL));
	E("send", send(c, "named", 5, 0), 5, 0);
	E("recv", recv(a, buf, sizeof buf, 0), 5, 0);
	struct sockaddr_un got;
	socklen_t gl = sizeof got;
	E("getsockname", getsockname(l, (struct sockaddr *)&got, &gl), 0, 0);
	out("path matches = %s\n", yesno(strcmp(got.sun_path, path) == 0));
	unlink(path);

	out("-- epoll and poll over unix and udp together\n");
	int u = udp_bound(0), us = udp_bound(0);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 1 }, evs[4];
	epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev);
	ev.data.u32 = 2;
	epoll_ctl(ep, EPOLL_CTL_ADD, u, &ev);
	ev.data.u32 = 3;
	epoll_ctl(ep, EPOLL_CTL_ADD, sp[1], &ev);
	E("epoll_wait idle", epoll_wait(ep, evs, 4, 0), 0, 0);
	send(c, "x", 1, 0);
	udp_send_to(us, "y", 1, port_of(u));
	send(sp[0], "z", 1, 0);
	wait_readable(u, 1000);
	int n = (int)E("epoll_wait all three", epoll_wait(ep, evs, 4, 1000), 3, 0);
	unsigned mask = 0;
	for (int i = 0; i < n; i++)
		mask |= 1u << evs[i].data.u32;
	out("tags seen = 0x%x\n", mask);
	struct pollfd p[3] = { { a, POLLIN, 0 }, { u, POLLIN, 0 }, { sp[1], POLLIN, 0 } };
	E("poll all three", poll(p, 3, 0), 3, 0);
	close(ep);
	close(a);
	close(c);
	close(l);
	close(u);
	close(us);
	close(sp[0]);
	close(sp[1]);
	return finish();
}

/* Edge-triggered epoll on TCP connections in every phase of a connection: registered right
 * after a non-blocking connect and the accept, before any byte moved (CPython's test_epoll
 * test_control_and_wait); new bytes while earlier ones are unread, before and after the
 * connections warmed up (when a connection can leave the kernel's data path it has then);
 * new bytes while a wait sleeps; writability lost by a full send buffer and given back by the
 * peer's reads; the peer's shutdown.
 * After each report a second wait with nothing new reports nothing. */
#include "epoll_show.h"

static int add(int ep, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* nb_pair connects *c (non-blocking, the connect in progress) to a fresh listener and accepts *s. */
static void nb_pair(int *c, int *s)
{
	int l = tcp_listener(0);
	*c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (*c < 0)
		die("socket");
	struct sockaddr_in a = lo_addr(port_of(l));
	E("connect non-blocking", connect(*c, (struct sockaddr *)&a, sizeof a), -1, EINPROGRESS);
	*s = accept(l, NULL, NULL);
	if (*s < 0)
		die("accept");
	close(l);
}

static void warm(int c, int s)
{
	char buf[4];
	for (int i = 0; i < 8; i++) {
		if (send_all(c, "ping", 4) < 0 || recv_all(s, buf, 4) != 4 || send_all(s, "pong", 4) < 0 ||
		    recv_all(c, buf, 4) != 4)
			die("warm-up exchange");
	}
}

static int g_late_fd;

static void *send_late(void *arg)
{
	(void)arg;
	msleep(200);
	if (send(g_late_fd, "c", 1, 0) != 1)
		die("late send");
	return NULL;
}

/* unread_rounds sends to s without s reading, before a wait and while one sleeps: each arrival
 * is an edge. */
static void unread_rounds(int c, int s)
{
	char buf[16];
	int ep = epoll_create1(0);
	E("add in|out edge", add(ep, s, EPOLLIN | EPOLLOUT | EPOLLET, 1), 0, 0);
	epoll_wait_show("first", ep, 1000);
	epoll_wait_show("again", ep, 100);
	V("send a", send(c, "a", 1, 0));
	CHECK("a arrived", wait_bytes(s, 1));
	epoll_wait_show("data", ep, 1000);
	epoll_wait_show("again", ep, 100);
	V("send b", send(c, "b", 1, 0));
	CHECK("b arrived", wait_bytes(s, 2));
	epoll_wait_show("more data, a unread", ep, 1000);
	epoll_wait_show("again", ep, 100);
	g_late_fd = c;
	pthread_t th;
	if (pthread_create(&th, NULL, send_late, NULL) != 0)
		die("pthread_create");
	double t0 = now_s();
	epoll_wait_show("more data while asleep, a and b unread", ep, 3000);
	CHECK("woken by the arrival", now_s() - t0 < 2.0);
	pthread_join(th, NULL);
	epoll_wait_show("again", ep, 100);
	V("recv", recv_all(s, buf, 3));
	show("bytes", buf, 3);
	epoll_wait_show("drained", ep, 100);
	close(ep);
}

int main(void)
{
	char buf[4096];
	int c, s;

	out("-- registered before any byte moved\n");
	nb_pair(&c, &s);
	int ep = epoll_create1(0);
	E("add server end", add(ep, s, EPOLLIN | EPOLLOUT | EPOLLET, 1), 0, 0);
	E("add client end", add(ep, c, EPOLLIN | EPOLLOUT | EPOLLET, 2), 0, 0);
	epoll_wait_show("first", ep, 1000);
	epoll_wait_show("again", ep, 100);
	V("client sends", send(c, "Hello!", 6, 0));
	V("server sends", send(s, "world!!!", 8, 0));
	CHECK("server got it", wait_bytes(s, 6));
	CHECK("client got it", wait_bytes(c, 8));
	epoll_wait_show("data both ways", ep, 1000);
	epoll_wait_show("again", ep, 100);
	E("delete client end", epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL), 0, 0);
	struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = 3 };
	E("modify server end to out", epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev), 0, 0);
	epoll_wait_show("after modify", ep, 1000);
	ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
	ev.data.u64 = 4;
	E("modify server end to in|out edge", epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev), 0, 0);
	epoll_wait_show("modified: unread data is reported", ep, 1000);
	epoll_wait_show("again", ep, 100);
	close(ep);
	close(c);
	close(s);

	out("-- new bytes while earlier ones are unread, fresh connection\n");
	tcp_pair(&c, &s);
	unread_rounds(c, s);
	close(c);
	close(s);

	out("-- new bytes while earlier ones are unread, warm connection\n");
	tcp_pair(&c, &s);
	warm(c, s);
	unread_rounds(c, s);

	out("-- writability lost and given back\n");
	ep = epoll_create1(0);
	E("add sender edge", add(ep, c, EPOLLIN | EPOLLOUT | EPOLLET, 5), 0, 0);
	epoll_wait_show("writable", ep, 1000);
	epoll_wait_show("again", ep, 100);
	int fl = fcntl(c, F_GETFL);
	fcntl(c, F_SETFL, fl | O_NONBLOCK);
	long sent = 0;
	memset(buf, 'x', sizeof buf);
	for (;;) {
		ssize_t w = send(c, buf, sizeof buf, 0);
		if (w < 0)
			break;
		sent += w;
	}
	E("send until full", -1, -1, EAGAIN);
	CHECK("sent something", sent > 0);
	epoll_wait_show("full", ep, 100);
	long got = 0;
	while (got < sent) {
		ssize_t r = recv(s, buf, sizeof buf, 0);
		if (r <= 0)
			die("recv while draining");
		got += r;
	}
	CHECK("peer read everything", got == sent);
	epoll_wait_show("space back", ep, 1000);
	epoll_wait_show("again", ep, 100);
	fcntl(c, F_SETFL, fl);

	out("-- the peer's shutdown\n");
	E("peer shut wr", shutdown(s, SHUT_WR), 0, 0);
	epoll_wait_show("peer shut", ep, 1000);
	epoll_wait_show("again", ep, 100);
	V("recv EOF", recv(c, buf, sizeof buf, 0));
	epoll_wait_show("after EOF read", ep, 100);
	close(ep);
	close(c);
	close(s);
	return finish();
}

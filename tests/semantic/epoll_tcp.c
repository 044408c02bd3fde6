/* epoll with TCP connections deleted and added back (the way event loops such as redis' ae do
 * around every request): a deleted connection reports nothing whatever arrives, MOD and DEL of it
 * fail with ENOENT, adding it back reports what is pending with the new data, an fd closed after
 * its delete and a new connection on the same number, a dup added after the original was deleted
 * and closed, a peer that closes while the connection is out of the set; edge-triggered reports
 * with every ready event, the FIN and the reset as edges. */
#include "epoll_show.h"

static int add(int ep, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static int mod(int ep, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };
	return epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
}

/* warm exchanges a few messages both ways, so that a connection that can leave the kernel's
 * data path has done so. */
static void warm(int c, int s)
{
	char buf[4];
	for (int i = 0; i < 8; i++) {
		if (send_all(c, "ping", 4) < 0 || recv_all(s, buf, 4) != 4 || send_all(s, "pong", 4) < 0 ||
		    recv_all(c, buf, 4) != 4)
			die("warm-up exchange");
	}
}

int main(void)
{
	char buf[64];
	int c, s;
	tcp_pair(&c, &s);
	warm(c, s);
	int ep = epoll_create1(0);

	out("-- delete and add back\n");
	E("add", add(ep, s, EPOLLIN, 2), 0, 0);
	epoll_wait_show("idle", ep, 0);
	V("send a", send(c, "a", 1, 0));
	epoll_wait_show("data", ep, 1000);
	E("del", epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL), 0, 0);
	epoll_wait_show("after del, data unread", ep, 0);
	V("send b", send(c, "b", 1, 0));
	CHECK("b arrived", wait_bytes(s, 2));
	epoll_wait_show("after del, more data", ep, 100);
	E("mod after del", mod(ep, s, EPOLLIN, 9), -1, ENOENT);
	E("del after del", epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL), -1, ENOENT);
	E("add back", add(ep, s, EPOLLIN, 3), 0, 0);
	E("add twice", add(ep, s, EPOLLIN, 3), -1, EEXIST);
	epoll_wait_show("added back", ep, 1000);
	V("recv", recv_all(s, buf, 2));
	show("bytes", buf, 2);
	epoll_wait_show("drained", ep, 0);

	out("-- many rounds, as an event loop does\n");
	int reported = 0;
	for (int i = 0; i < 200; i++) {
		struct epoll_event ev;
		if (epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL) != 0 || send(c, "x", 1, 0) != 1 ||
		    add(ep, s, EPOLLIN, 100 + (uint64_t)i) != 0)
			die("round");
		if (epoll_wait(ep, &ev, 1, 1000) == 1 && ev.data.u64 == 100 + (uint64_t)i && (ev.events & EPOLLIN))
			reported++;
		if (recv_all(s, buf, 1) != 1)
			die("round recv");
	}
	V("rounds reported with their own data", reported);
	epoll_wait_show("after the rounds", ep, 0);

	out("-- edge-triggered add back\n");
	E("del", epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL), 0, 0);
	E("add edge", add(ep, s, EPOLLIN | EPOLLET, 4), 0, 0);
	epoll_wait_show("edge idle", ep, 0);
	V("send c", send(c, "c", 1, 0));
	epoll_wait_show("edge data", ep, 1000);
	epoll_wait_show("edge again", ep, 0);
	V("recv", recv_all(s, buf, 1));

	out("-- closed after its delete, new connection on the number\n");
	E("del", epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL), 0, 0);
	E("close", close(s), 0, 0);
	V("peer reads EOF", recv(c, buf, sizeof buf, 0));
	close(c);
	int c2, s2;
	tcp_pair(&c2, &s2);
	warm(c2, s2);
	E("add new", add(ep, s2, EPOLLIN, 5), 0, 0);
	epoll_wait_show("new idle", ep, 0);
	V("send d", send(c2, "d", 1, 0));
	epoll_wait_show("new data", ep, 1000);

	out("-- a dup added after the original was deleted and closed\n");
	int d = dup(s2);
	E("del original", epoll_ctl(ep, EPOLL_CTL_DEL, s2, NULL), 0, 0);
	E("close original", close(s2), 0, 0);
	E("add dup", add(ep, d, EPOLLIN, 6), 0, 0);
	epoll_wait_show("dup pending", ep, 1000);
	V("recv", recv_all(d, buf, 1));
	epoll_wait_show("dup drained", ep, 0);
	V("send e", send(c2, "e", 1, 0));
	epoll_wait_show("dup data", ep, 1000);
	V("recv", recv_all(d, buf, 1));

	out("-- the peer closes while the connection is out of the set\n");
	E("del dup", epoll_ctl(ep, EPOLL_CTL_DEL, d, NULL), 0, 0);
	E("peer close", close(c2), 0, 0);
	CHECK("EOF visible", wait_readable(d, 1000));
	double t0 = now_s();
	epoll_wait_show("after del, peer closed", ep, 200);
	CHECK("waited the timeout", now_s() - t0 >= 0.15);
	E("add back", add(ep, d, EPOLLIN | EPOLLRDHUP, 7), 0, 0);
	epoll_wait_show("added back after EOF", ep, 1000);
	V("recv EOF", recv(d, buf, sizeof buf, 0));
	close(d);

	out("-- edge-triggered reports carry every ready event; FIN and reset are edges\n");
	int c3, s3;
	tcp_pair(&c3, &s3);
	warm(c3, s3);
	E("add in|out edge", add(ep, s3, EPOLLIN | EPOLLOUT | EPOLLET, 8), 0, 0);
	epoll_wait_show("first", ep, 1000);
	epoll_wait_show("again", ep, 0);
	V("send f", send(c3, "f", 1, 0));
	epoll_wait_show("data", ep, 1000);
	epoll_wait_show("again", ep, 0);
	V("recv", recv_all(s3, buf, 1));
	V("send to the peer", send(s3, "g", 1, 0));
	epoll_wait_show("after own send", ep, 100);
	E("peer shut wr", shutdown(c3, SHUT_WR), 0, 0);
	epoll_wait_show("peer shut", ep, 1000);
	epoll_wait_show("again", ep, 0);
	V("recv EOF", recv(s3, buf, sizeof buf, 0));
	E("peer close with unread data", close(c3), 0, 0);
	epoll_wait_show("peer reset", ep, 1000);
	epoll_wait_show("again", ep, 0);
	close(s3);
	close(ep);
	return finish();
}

/* epoll: level-triggered reports until drained, edge-triggered once per arrival, EPOLLONESHOT
 * disables until EPOLL_CTL_MOD re-arms, EPOLLRDHUP/EPOLLHUP on shutdown, data.u64 kept, and the
 * errors of epoll_ctl and epoll_wait. */
#include "epoll_show.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>

static int ep;

static void wait_show(const char *label, int ms)
{
	epoll_wait_show(label, ep, ms);
}

static void add(int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		die("epoll_ctl add");
}

static void modes(const char *name, int rfd, int wfd, int is_udp, int port)
{
	char buf[64];
	out("== %s\n", name);
#define SEND(s, n) (is_udp ? udp_send_to(wfd, s, n, port) : send(wfd, s, n, 0))
	out("-- level-triggered\n");
	add(rfd, EPOLLIN, 1);
	wait_show("empty", 0);
	SEND("abcd", 4);
	wait_show("after send", 1000);
	wait_show("again", 0);
	E("recv 2", recv(rfd, buf, 2, 0), 2, 0);
	wait_show(is_udp ? "after reading part of a datagram" : "after partial read", 0);
	if (!is_udp)
		E("recv rest", recv(rfd, buf, sizeof buf, 0), 2, 0);
	wait_show("drained", 0);
	epoll_ctl(ep, EPOLL_CTL_DEL, rfd, NULL);

	out("-- edge-triggered\n");
	add(rfd, EPOLLIN | EPOLLET, 2);
	wait_show("empty", 0);
	SEND("abcd", 4);
	wait_show("after send", 1000);
	wait_show("again", 0);
	SEND("efgh", 4);
	wait_show("after second send", 1000);
	E("recv 2", recv(rfd, buf, 2, 0), 2, 0);
	wait_show("after partial read", 0);
	SEND("ijkl", 4);
	wait_show("after third send", 1000);
	while (recv(rfd, buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
	wait_show("drained", 0);
	epoll_ctl(ep, EPOLL_CTL_DEL, rfd, NULL);

	out("-- oneshot\n");
	add(rfd, EPOLLIN | EPOLLONESHOT, 3);
	SEND("abcd", 4);
	wait_show("after send", 1000);
	wait_show("again (disarmed)", 0);
	SEND("efgh", 4);
	wait_show("after second send (disarmed)", 50);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 33 };
	E("epoll_ctl mod rearm", epoll_ctl(ep, EPOLL_CTL_MOD, rfd, &ev), 0, 0);
	wait_show("after rearm", 1000);
	wait_show("again (disarmed)", 0);
	ev.events = EPOLLIN | EPOLLET | EPOLLONESHOT;
	ev.data.u64 = 34;
	E("epoll_ctl mod rearm edge", epoll_ctl(ep, EPOLL_CTL_MOD, rfd, &ev), 0, 0);
	wait_show("after rearm edge (data pending)", 1000);
	while (recv(rfd, buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
	ev.events = EPOLLIN;
	ev.data.u64 = 35;
	E("epoll_ctl mod to level", epoll_ctl(ep, EPOLL_CTL_MOD, rfd, &ev), 0, 0);
	wait_show("drained", 0);
	SEND("z", 1);
	wait_show("after send", 1000);
	wait_show("again", 0);
	recv(rfd, buf, sizeof buf, 0);
	epoll_ctl(ep, EPOLL_CTL_DEL, rfd, NULL);

	out("-- EPOLLOUT level and edge\n");
	add(wfd, EPOLLOUT, 4);
	wait_show("writable", 0);
	wait_show("writable again", 0);
	epoll_ctl(ep, EPOLL_CTL_DEL, wfd, NULL);
	add(wfd, EPOLLOUT | EPOLLET, 5);
	wait_show("writable edge", 0);
	wait_show("writable edge again", 0);
	epoll_ctl(ep, EPOLL_CTL_DEL, wfd, NULL);
#undef SEND
}

int main(void)
{
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	out("epoll fd cloexec = %s\n", yesno(fcntl(ep, F_GETFD) & FD_CLOEXEC));

	int r = udp_bound(0), s = udp_bound(0);
	modes("udp", r, s, 1, port_of(r));
	int c, a;
	tcp_pair(&c, &a);
	modes("tcp", a, c, 0, 0);

	out("== tcp shutdown events\n");
	add(a, EPOLLIN | EPOLLRDHUP | EPOLLOUT, 6);
	wait_show("idle", 0);
	shutdown(c, SHUT_WR);
	wait_readable(a, 1000);
	wait_show("peer shut wr", 0);
	shutdown(a, SHUT_WR);
	msleep(20);
	wait_show("both shut", 0);
	epoll_ctl(ep, EPOLL_CTL_DEL, a, NULL);
	close(c);
	close(a);

	out("== errors\n");
	struct epoll_event ev = { .events = EPOLLIN };
	E("add", epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev), 0, 0);
	E("add twice", epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev), -1, EEXIST);
	E("mod absent", epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev), -1, ENOENT);
	E("del absent", epoll_ctl(ep, EPOLL_CTL_DEL, s, &ev), -1, ENOENT);
	E("add itself", epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), -1, EINVAL);
	E("add -1", epoll_ctl(ep, EPOLL_CTL_ADD, -1, &ev), -1, EBADF);
	E("ctl on non-epoll fd", epoll_ctl(r, EPOLL_CTL_ADD, s, &ev), -1, EINVAL);
	E("bad op", epoll_ctl(ep, 99, r, &ev), -1, EINVAL);
	int f = open("/proc/self/stat", O_RDONLY);
	E("add regular file", epoll_ctl(ep, EPOLL_CTL_ADD, f, &ev), -1, EPERM);
	close(f);
	struct epoll_event evs[2];
	E("wait maxevents 0", epoll_wait(ep, evs, 0, 0), -1, EINVAL);
	E("wait on non-epoll fd", epoll_wait(r, evs, 2, 0), -1, EINVAL);
	E("wait on -1", epoll_wait(-1, evs, 2, 0), -1, EBADF);
	E("epoll_create 0", epoll_create(0), -1, EINVAL);
	E("epoll_create1 bad flags", epoll_create1(12345), -1, EINVAL);
	int old = (int)OK("epoll_create 1", epoll_create(1));
	close(old);
	E("wait timeout 100ms", epoll_wait(ep, evs, 2, 100), 0, 0);
	E("epoll_pwait timeout", epoll_pwait(ep, evs, 2, 10, NULL), 0, 0);
	struct timespec ts = { 0, 10000000 };
	E("epoll_pwait2 timeout", epoll_pwait2(ep, evs, 2, &ts, NULL), 0, 0);
	udp_send_to(s, "q", 1, port_of(r));
	E("epoll_pwait2 ready", epoll_pwait2(ep, evs, 2, NULL, NULL), 1, 0);
	close(r);
	close(s);
	close(ep);
	return finish();
}

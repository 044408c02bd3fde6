/* epoll in a forked child sees the datagrams that were queued on an inherited UDP socket before
 * the fork, in a level-triggered, an edge-triggered and a one-shot set, and stops seeing them once
 * they are received; the parent's epoll sees what the child left. */
#include "common.h"

#include <sys/epoll.h>

static void ewait(const char *who, int ep, int ms)
{
	struct epoll_event ev[4];
	int n = epoll_wait(ep, ev, 4, ms);
	out("%s: epoll_wait = %d", who, n);
	for (int i = 0; i < n; i++)
		out(" [data %llu, %s]", (unsigned long long)ev[i].data.u64,
		    (ev[i].events & EPOLLIN) ? "in" : "not in");
	out("\n");
}

static int set_with(int fd, uint32_t events, uint64_t data)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	struct epoll_event e = { events, { .u64 = data } };
	E("epoll_ctl add", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e), 0, 0);
	return ep;
}

int main(void)
{
	char buf[64];
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r);
	int lt = set_with(r, EPOLLIN, 7), et = set_with(r, EPOLLIN | EPOLLET, 8),
	    once = set_with(r, EPOLLIN | EPOLLONESHOT, 9);
	/* Traffic first, so that a fast path is set up between the sockets. */
	for (int i = 0; i < 3; i++) {
		E("send before", udp_send_to(s, "warm", 4, rp), 4, 0);
		wait_readable(r, 2000);
		E("recv before", recv(r, buf, sizeof buf, 0), 4, 0);
	}
	ewait("parent, nothing queued", lt, 0);
	struct epoll_event rearm = { EPOLLIN | EPOLLONESHOT, { .u64 = 9 } };
	E("send one", udp_send_to(s, "one", 3, rp), 3, 0);
	E("send two", udp_send_to(s, "two", 3, rp), 3, 0);
	E("send three", udp_send_to(s, "three", 5, rp), 5, 0);
	wait_readable(r, 2000);
	msleep(20);
	E("rearm one-shot", epoll_ctl(once, EPOLL_CTL_MOD, r, &rearm), 0, 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		ewait("child, level-triggered", lt, 1000);
		ewait("child, level-triggered again", lt, 0);
		ewait("child, edge-triggered", et, 1000);
		ewait("child, edge-triggered again", et, 0);
		ewait("child, one-shot", once, 1000);
		ewait("child, one-shot again", once, 0);
		long k = E("child: recv", recv(r, buf, sizeof buf, 0), 3, 0);
		show("child: data", buf, k);
		ewait("child, level-triggered after one recv", lt, 0);
		k = E("child: recv", recv(r, buf, sizeof buf, 0), 3, 0);
		show("child: data", buf, k);
		_exit(g_fail ? 1 : 0);
	}
	int st;
	waitpid(pid, &st, 0);
	out("child exit = %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		g_fail++;
	ewait("parent, level-triggered", lt, 1000);
	long k = E("parent: recv", recv(r, buf, sizeof buf, 0), 5, 0);
	show("parent: data", buf, k);
	ewait("parent, level-triggered, all received", lt, 0);
	E("parent: recv", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	E("send four", udp_send_to(s, "four", 4, rp), 4, 0);
	ewait("parent, level-triggered, one new", lt, 2000);
	k = E("parent: recv", recv(r, buf, sizeof buf, 0), 4, 0);
	show("parent: data", buf, k);
	return finish();
}

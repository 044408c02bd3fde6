/* epoll across sets: one socket in two epoll sets (edge and level), an epoll fd inside another epoll
 * fd, closing a socket that is in a set (it leaves the set), and the kernel's rule that a registration
 * lives as long as the open file: a dup keeps it reporting under the closed fd's data. */
#include "epoll_show.h"
#include <sys/epoll.h>

static void wait_show(const char *label, int ep, int ms)
{
	epoll_wait_show(label, ep, ms);
}

static int add(int ep, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

int main(void)
{
	char buf[64];
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r);

	out("-- one socket in two sets\n");
	int e1 = epoll_create1(0), e2 = epoll_create1(0);
	E("add to set 1 (level)", add(e1, r, EPOLLIN, 11), 0, 0);
	E("add to set 2 (edge)", add(e2, r, EPOLLIN | EPOLLET, 22), 0, 0);
	udp_send_to(s, "a", 1, rp);
	wait_show("set 1", e1, 1000);
	wait_show("set 2", e2, 1000);
	wait_show("set 1 again", e1, 0);
	wait_show("set 2 again", e2, 0);
	recv(r, buf, sizeof buf, 0);
	wait_show("set 1 drained", e1, 0);
	E("del from set 1", epoll_ctl(e1, EPOLL_CTL_DEL, r, NULL), 0, 0);
	udp_send_to(s, "b", 1, rp);
	wait_show("set 2 after del from set 1", e2, 1000);
	wait_show("set 1 after del", e1, 0);
	recv(r, buf, sizeof buf, 0);

	out("-- epoll inside epoll\n");
	int outer = epoll_create1(0);
	E("add inner to outer", add(outer, e2, EPOLLIN, 99), 0, 0);
	wait_show("outer idle", outer, 0);
	udp_send_to(s, "c", 1, rp);
	wait_show("outer", outer, 1000);
	wait_show("inner", e2, 0);
	wait_show("outer after inner consumed edge", outer, 0);
	recv(r, buf, sizeof buf, 0);
	E("add outer to inner (loop)", add(e2, outer, EPOLLIN, 98), -1, ELOOP);
	int inner2 = epoll_create1(0);
	E("add socket to inner2", add(inner2, s, EPOLLOUT, 7), 0, 0);
	E("add inner2 to outer", add(outer, inner2, EPOLLIN, 77), 0, 0);
	wait_show("outer with writable inner2", outer, 1000);
	close(inner2);
	wait_show("outer after closing inner2", outer, 0);

	out("-- closing a socket that is in a set\n");
	int x = udp_bound(0);
	int xp = port_of(x);
	int e3 = epoll_create1(0);
	add(e3, x, EPOLLIN, 33);
	udp_send_to(s, "d", 1, xp);
	wait_show("before close", e3, 1000);
	E("close", close(x), 0, 0);
	wait_show("after close", e3, 0);
	E("del closed fd", epoll_ctl(e3, EPOLL_CTL_DEL, x, NULL), -1, EBADF);

	out("-- closing one of two dups that is in a set\n");
	int y = udp_bound(0);
	int yp = port_of(y);
	add(e3, y, EPOLLIN, 44);
	int yd = (int)OK("dup", dup(y));
	E("close original", close(y), 0, 0);
	udp_send_to(s, "e", 1, yp);
	wait_readable(yd, 1000);
	wait_show("dup keeps the registration alive", e3, 1000);
	E("del by closed number", epoll_ctl(e3, EPOLL_CTL_DEL, y, NULL), -1, EBADF);
	E("del by dup number", epoll_ctl(e3, EPOLL_CTL_DEL, yd, NULL), -1, ENOENT);
	E("add dup", add(e3, yd, EPOLLIN, 55), 0, 0);
	wait_show("both registrations", e3, 1000);
	E("recv on dup", recv(yd, buf, sizeof buf, 0), 1, 0);
	close(yd);
	wait_show("after closing the last reference", e3, 0);

	close(e1);
	close(e2);
	close(e3);
	close(outer);
	close(r);
	close(s);
	return finish();
}

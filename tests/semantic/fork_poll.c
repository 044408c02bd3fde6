/* select and poll in a forked child see the datagrams that were queued on an inherited UDP socket
 * before the fork, and stop seeing them once they are received; the parent sees what the child
 * left. */
#include "common.h"

static int sel1(int fd, int ms)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(fd, &r);
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	int n = select(fd + 1, &r, NULL, NULL, &tv);
	return n < 0 ? n : (n == 1 && FD_ISSET(fd, &r));
}

static int sel_rw(int fd)
{
	fd_set r, w;
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_SET(fd, &r);
	FD_SET(fd, &w);
	struct timeval tv = { 0, 0 };
	int n = select(fd + 1, &r, &w, NULL, &tv);
	out("select read+write = %d, readable %s, writable %s\n", n, yesno(FD_ISSET(fd, &r)), yesno(FD_ISSET(fd, &w)));
	return n;
}

int main(void)
{
	char buf[64];
	int r = udp_bound(0), s = udp_bound(0), other = udp_bound(0);
	int rp = port_of(r);
	/* Traffic first, so that a fast path is set up between the sockets. */
	for (int i = 0; i < 3; i++) {
		E("send before", udp_send_to(s, "warm", 4, rp), 4, 0);
		wait_readable(r, 2000);
		E("recv before", recv(r, buf, sizeof buf, 0), 4, 0);
	}
	E("send one", udp_send_to(s, "one", 3, rp), 3, 0);
	E("send two", udp_send_to(s, "two", 3, rp), 3, 0);
	E("send three", udp_send_to(s, "three", 5, rp), 5, 0);
	wait_readable(r, 2000);
	msleep(20);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		out("child: poll = %s\n", pollbits(poll1(r, POLLIN, 0)));
		out("child: poll with another fd = ");
		struct pollfd p[2] = { { other, POLLIN, 0 }, { r, POLLIN | POLLOUT, 0 } };
		int n = poll(p, 2, 1000);
		out("%d, other %s, socket %s\n", n, pollbits(p[0].revents), pollbits(p[1].revents));
		out("child: select = %d\n", sel1(r, 1000));
		sel_rw(r);
		long k = E("child: recv", recv(r, buf, sizeof buf, 0), 3, 0);
		show("child: data", buf, k);
		out("child: select = %d\n", sel1(r, 0));
		k = E("child: recv", recv(r, buf, sizeof buf, 0), 3, 0);
		show("child: data", buf, k);
		out("child: poll = %s\n", pollbits(poll1(r, POLLIN, 0)));
		_exit(g_fail ? 1 : 0);
	}
	int st;
	waitpid(pid, &st, 0);
	out("child exit = %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		g_fail++;
	out("parent: poll = %s\n", pollbits(poll1(r, POLLIN, 0)));
	out("parent: select = %d\n", sel1(r, 0));
	long k = E("parent: recv", recv(r, buf, sizeof buf, 0), 5, 0);
	show("parent: data", buf, k);
	out("parent: poll = %s\n", pollbits(poll1(r, POLLIN, 0)));
	out("parent: select = %d\n", sel1(r, 0));
	out("-- the child empties what was queued, the parent's poll sees nothing\n");
	E("send four", udp_send_to(s, "four", 4, rp), 4, 0);
	wait_readable(r, 2000);
	msleep(20);
	pid = fork();
	if (pid == 0) {
		out("child: select = %d\n", sel1(r, 1000));
		k = E("child: recv", recv(r, buf, sizeof buf, 0), 4, 0);
		show("child: data", buf, k);
		out("child: poll = %s\n", pollbits(poll1(r, POLLIN, 0)));
		_exit(g_fail ? 1 : 0);
	}
	waitpid(pid, &st, 0);
	out("child exit = %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	out("parent: poll = %s\n", pollbits(poll1(r, POLLIN, 0)));
	E("parent: recv", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	return finish();
}

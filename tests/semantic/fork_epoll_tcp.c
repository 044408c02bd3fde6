/*
 * epoll in a forked child over a TCP connection that was on shared-memory rings in the parent
 * (paired: more round trips than the late pairing's default of four data calls): the child's
 * wait sees nothing while nothing was sent, then the parent's bytes, which it receives.
 */
#include "common.h"
#include <sys/epoll.h>

int main(void)
{
	int c, s;
	tcp_pair(&c, &s);
	char buf[64];
	for (int i = 0; i < 8; i++) {
		E("warm send", send(c, "ping", 4, 0), 4, 0);
		E("warm recv", recv_all(s, buf, 4), 4, 0);
	}
	int ep = epoll_create1(0);
	struct epoll_event e = { EPOLLIN, { .u64 = 42 } };
	E("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e), 0, 0);
	struct epoll_event ev[4];
	out("parent wait0 = %d\n", epoll_wait(ep, ev, 4, 0));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		double t0 = now_s();
		int n = epoll_wait(ep, ev, 4, 300);
		out("child: wait with nothing sent = %d after %s\n", n, now_s() - t0 > 0.25 ? "the timeout" : "less than the timeout");
		n = epoll_wait(ep, ev, 4, 3000);
		out("child: wait = %d data %llu in %s\n", n, n > 0 ? (unsigned long long)ev[0].data.u64 : 0ULL, n > 0 && (ev[0].events & EPOLLIN) ? "yes" : "no");
		long k = recv(s, buf, sizeof buf, 0);
		out("child: recv = %ld\n", k);
		_exit(0);
	}
	msleep(500);
	long sent = send(c, "hello", 5, 0); /* printed after the child's lines: one order */
	int st;
	waitpid(pid, &st, 0);
	E("parent send", sent, 5, 0);
	out("child exit = %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return finish();
}

/* Programs that close every fd above stderr (daemons, close_range, closefrom, a close() loop up to the
 * fd limit) must keep working: new UDP and TCP sockets, epoll, poll, threads, a fork. */
#include "common.h"
#include <linux/close_range.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/syscall.h>

static void *thread_send(void *arg)
{
	int port = *(int *)arg;
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	udp_send_to(u, "thread", 6, port);
	close(u);
	return NULL;
}

static void round_trip(const char *label)
{
	char buf[16];
	out("-- after %s\n", label);
	int r = socket(AF_INET, SOCK_DGRAM, 0);
	OK("udp socket", r);
	struct sockaddr_in a = lo_addr(0);
	E("bind", bind(r, (struct sockaddr *)&a, sizeof a), 0, 0);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	E("udp send", udp_send_to(s, "ping", 4, port_of(r)), 4, 0);
	E("poll", poll1(r, POLLIN, 1000), POLLIN, 0);
	E("udp recv", recv(r, buf, sizeof buf, 0), 4, 0);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 7 }, evs[2];
	E("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev), 0, 0);
	int port = port_of(r);
	pthread_t th;
	E("pthread_create", pthread_create(&th, NULL, thread_send, &port), 0, 0);
	pthread_join(th, NULL);
	E("epoll_wait", epoll_wait(ep, evs, 2, 1000), 1, 0);
	E("recv from thread", recv(r, buf, sizeof buf, 0), 6, 0);
	int c, t;
	tcp_pair(&c, &t);
	E("tcp send", send(c, "tcp", 3, 0), 3, 0);
	E("tcp recv", recv_all(t, buf, 3), 3, 0);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		_exit(send(t, "kid", 3, 0) == 3 ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	out("child exit = %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	E("tcp recv from child", recv_all(c, buf, 3), 3, 0);
	close(c);
	close(t);
	close(ep);
	close(r);
	close(s);
}

int main(void)
{
	round_trip("start-up");

	E("close_range(3, ~0U, 0)", syscall(SYS_close_range, 3U, ~0U, 0), 0, 0);
	round_trip("close_range syscall");

	E("close_range(3, ~0U, 0) via libc", close_range(3, ~0U, 0), 0, 0);
	round_trip("close_range");

	E("close_range CLOSE_RANGE_CLOEXEC", close_range(3, ~0U, CLOSE_RANGE_CLOEXEC), 0, 0);
	round_trip("close_range CLOSE_RANGE_CLOEXEC");

	closefrom(3);
	round_trip("closefrom(3)");

	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	long max = (long)rl.rlim_cur;
	if (max > 65536)
		max = 65536;
	int closed = 0;
	for (long fd = 3; fd < max; fd++)
		if (close((int)fd) == 0)
			closed++;
	/* Everything above stderr is closed already: the loop must find nothing to close. */
	E("fds the close loop found open", closed, 0, 0);
	round_trip("close loop");

	for (int fd = 3; fd < 64; fd++)
		dup2(2, fd);
	closefrom(3);
	round_trip("dup2 over low fds, then closefrom");
	return finish();
}

/* A long-running program's descriptors while the library's Go runtime collects garbage many times
 * (the run re-executes itself with GOGC=1): thousands of UDP and TCP sockets with traffic, then
 * close_range(3, ~0U, 0), then more traffic on new sockets. The fds the program sees in
 * /proc/self/fd and finds open (fcntl F_GETFD) must be the same with and without the library at
 * every step: the runtime's own epoll fd and eventfd (which any Go timer opens) must never be
 * among them, nor anywhere below 1024, and close_range must not take them (the process would abort
 * at the next wake-up of the runtime). With an argument "list-all", the last step also lists every
 * fd readdir shows, open to the program or not (tests/runtime_fds_test.go). */
// timeout: 60s
#include "common.h"
#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/epoll.h>
#include <sys/syscall.h>

static int list_all;

/* list prints the fds readdir shows below limit: all of them, or (only_open) those fcntl finds open. */
static void list(const char *label, int limit, int only_open)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		die("opendir");
	int self = dirfd(d);
	static int fds[65536];
	int k = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd == self || fd >= limit || k >= 65536)
			continue;
		if (only_open && fcntl(fd, F_GETFD) < 0) {
			if (errno != EBADF || fd < 1024)
				die("fd %d listed below 1024 but not open", fd);
			continue;
		}
		fds[k++] = fd;
	}
	closedir(d);
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
			int t = fds[j];
			fds[j] = fds[j - 1];
			fds[j - 1] = t;
		}
	out("%s:", label);
	for (int i = 0; i < k; i++)
		out(" %d", fds[i]);
	out("\n");
}

/* traffic makes and closes n UDP pairs and n/8 TCP pairs with a datagram or a few bytes each;
 * it returns how many round trips failed. */
static int traffic(int n)
{
	char buf[1024], got[1024];
	memset(buf, 'x', sizeof buf);
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int r = udp_bound(0);
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		if (udp_send_to(s, buf, sizeof buf, port_of(r)) != (ssize_t)sizeof buf ||
		    poll1(r, POLLIN, 2000) != POLLIN || recv(r, got, sizeof got, 0) != (ssize_t)sizeof got)
			bad++;
		close(s);
		close(r);
		if (i % 8 == 0) {
			int c, t;
			tcp_pair(&c, &t);
			if (send(c, buf, 100, 0) != 100 || recv_all(t, got, 100) != 100)
				bad++;
			close(c);
			close(t);
		}
	}
	return bad;
}

static void epoll_round(void)
{
	char buf[8];
	int r = udp_bound(0), s = socket(AF_INET, SOCK_DGRAM, 0);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 9 }, evs[2];
	E("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev), 0, 0);
	E("udp send", udp_send_to(s, "epoll", 5, port_of(r)), 5, 0);
	E("epoll_wait", epoll_wait(ep, evs, 2, 2000), 1, 0);
	E("udp recv", recv(r, buf, sizeof buf, 0), 5, 0);
	close(ep);
	close(s);
	close(r);
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "child") != 0) {
		/* Collect garbage as often as the runtime can: the scavenger's timer comes after a few
		 * collections. */
		setenv("GOGC", "1", 1);
		char *args[] = { argv[0], "child", argc > 1 ? argv[1] : NULL, NULL };
		execv("/proc/self/exe", args);
		die("execv");
	}
	list_all = argc > 2 && strcmp(argv[2], "list-all") == 0;
	list("start-up", 1 << 30, 1);
	E("round trips lost, 3000 UDP and 375 TCP pairs", traffic(3000), 0, 0);
	list("after traffic", 1 << 30, 1);
	int keep = udp_bound(0);
	E("close_range(3, ~0U, 0)", syscall(SYS_close_range, 3U, ~0U, 0), 0, 0);
	char b[4];
	E("recv on a closed socket", recv(keep, b, sizeof b, MSG_DONTWAIT), -1, EBADF);
	list("after close_range", 1 << 30, 1);
	E("round trips lost after close_range", traffic(3000), 0, 0);
	epoll_round();
	list("after more traffic", 1 << 30, 1);
	E("close_range(3, ~0U, 0) via libc", close_range(3, ~0U, 0), 0, 0);
	E("round trips lost after the second close_range", traffic(500), 0, 0);
	epoll_round();
	list("at the end", 1 << 30, 1);
	if (list_all)
		list("every fd", 1 << 30, 0);
	return finish();
}

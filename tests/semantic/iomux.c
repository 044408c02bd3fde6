/* poll, ppoll, select and pselect over mixed fds: a UDP socket, a TCP socket, a pipe and an eventfd,
 * with some ready and some not; timeouts; negative and closed fds in poll; EBADF in select. */
#include "common.h"
#include <sys/eventfd.h>
#include <sys/select.h>

enum { UDP, TCP, PIPE, EVFD, TCPW, N };
static const char *names[N] = { "udp", "tcp", "pipe", "eventfd", "tcp-write" };
static int fds[N];

static void show_poll(const char *label, struct pollfd *p, int n, int r)
{
	if (r < 0) {
		out("%s = -1 %s\n", label, ename(errno));
		return;
	}
	out("%s = %d:", label, r);
	for (int i = 0; i < n; i++)
		out(" %s=%s", names[i], pollbits(p[i].revents));
	out("\n");
}

static void do_poll(const char *label, int ms)
{
	struct pollfd p[N];
	for (int i = 0; i < N; i++) {
		p[i].fd = fds[i];
		p[i].events = i == TCPW ? POLLOUT : POLLIN;
		p[i].revents = (short)0x7777;
	}
	int r = poll(p, N, ms);
	show_poll(label, p, N, r);
	for (int i = 0; i < N; i++)
		p[i].revents = 0;
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	sigset_t mask;
	sigemptyset(&mask);
	r = ppoll(p, N, &ts, &mask);
	char l2[128];
	snprintf(l2, sizeof l2, "%s (ppoll)", label);
	show_poll(l2, p, N, r);
}

static void show_sel(const char *label, int r, fd_set *rs, fd_set *ws)
{
	if (r < 0) {
		out("%s = -1 %s\n", label, ename(errno));
		return;
	}
	out("%s = %d:", label, r);
	for (int i = 0; i < N; i++) {
		int rd = FD_ISSET(fds[i], rs), wr = FD_ISSET(fds[i], ws);
		out(" %s=%s%s%s", names[i], rd ? "r" : "", wr ? "w" : "", rd || wr ? "" : "-");
	}
	out("\n");
}

static void do_select(const char *label, int ms)
{
	fd_set rs, ws;
	int maxfd = 0;
	FD_ZERO(&rs);
	FD_ZERO(&ws);
	for (int i = 0; i < N; i++) {
		if (i == TCPW)
			FD_SET(fds[i], &ws);
		else
			FD_SET(fds[i], &rs);
		if (fds[i] > maxfd)
			maxfd = fds[i];
	}
	fd_set rs2 = rs, ws2 = ws;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	int r = select(maxfd + 1, &rs, &ws, NULL, &tv);
	show_sel(label, r, &rs, &ws);
	if (r == 0)
		out("  timeval left = %ld.%06ld\n", (long)tv.tv_sec, (long)tv.tv_usec);
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	sigset_t mask;
	sigemptyset(&mask);
	r = pselect(maxfd + 1, &rs2, &ws2, NULL, &ts, &mask);
	char l2[128];
	snprintf(l2, sizeof l2, "%s (pselect)", label);
	show_sel(l2, r, &rs2, &ws2);
}

int main(void)
{
	char buf[64];
	fds[UDP] = udp_bound(0);
	int us = udp_bound(0);
	int tc, ts;
	tcp_pair(&tc, &ts);
	fds[TCP] = ts;
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe");
	fds[PIPE] = pp[0];
	fds[EVFD] = eventfd(0, EFD_NONBLOCK);
	fds[TCPW] = tc;

	out("-- nothing readable\n");
	do_poll("poll 50ms", 50);
	do_select("select 50ms", 50);

	out("-- udp and eventfd ready\n");
	udp_send_to(us, "u", 1, port_of(fds[UDP]));
	uint64_t one = 1;
	if (write(fds[EVFD], &one, sizeof one) != sizeof one)
		die("eventfd write");
	wait_readable(fds[UDP], 1000);
	do_poll("poll", 1000);
	do_select("select", 1000);

	out("-- all ready\n");
	send(tc, "t", 1, 0);
	if (write(pp[1], "p", 1) != 1)
		die("pipe write");
	wait_readable(ts, 1000);
	do_poll("poll", 1000);
	do_select("select", 1000);

	out("-- drained\n");
	recv(fds[UDP], buf, sizeof buf, 0);
	recv(ts, buf, sizeof buf, 0);
	if (read(pp[0], buf, sizeof buf) != 1 || read(fds[EVFD], &one, sizeof one) != sizeof one)
		die("drain");
	do_poll("poll 0", 0);
	do_select("select 0", 0);

	out("-- a blocking poll woken by a child process\n");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		msleep(100);
		send(tc, "late", 4, 0);
		_exit(0);
	}
	struct pollfd p2[2] = { { fds[UDP], POLLIN, 0 }, { ts, POLLIN, 0 } };
	double t0 = now_s();
	int r = poll(p2, 2, 5000);
	out("poll = %d udp=%s tcp=%s waited=%s\n", r, pollbits(p2[0].revents), pollbits(p2[1].revents),
	    yesno(now_s() - t0 >= 0.09));
	waitpid(pid, NULL, 0);
	recv(ts, buf, sizeof buf, 0);

	out("-- special entries\n");
	struct pollfd sp[4] = { { -1, POLLIN, 0 }, { fds[UDP], 0, 0 }, { 0, POLLIN, 0 }, { fds[TCPW], POLLOUT, 0 } };
	int closed = dup(fds[UDP]);
	close(closed);
	sp[2].fd = closed;
	sp[0].revents = 5;
	r = poll(sp, 4, 0);
	out("poll = %d negative=%s no-events=%s closed=%s writable=%s\n", r, pollbits(sp[0].revents),
	    pollbits(sp[1].revents), pollbits(sp[2].revents), pollbits(sp[3].revents));
	E("poll nothing 20ms", poll(NULL, 0, 20), 0, 0);
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(closed, &rs);
	struct timeval tv = { 0, 0 };
	E("select with a closed fd", select(closed + 1, &rs, NULL, NULL, &tv), -1, EBADF);
	E("select negative nfds", select(-1, NULL, NULL, NULL, &tv), -1, EINVAL);
	tv.tv_usec = 20000;
	E("select nothing 20ms", select(0, NULL, NULL, NULL, &tv), 0, 0);
	out("  timeval left = %ld.%06ld\n", (long)tv.tv_sec, (long)tv.tv_usec);
	tv.tv_usec = -1;
	E("select bad timeout", select(0, NULL, NULL, NULL, &tv), -1, EINVAL);

	out("-- peer closed\n");
	close(tc);
	struct pollfd hp = { ts, POLLIN | POLLOUT | POLLRDHUP, 0 };
	wait_readable(ts, 1000);
	r = poll(&hp, 1, 1000);
	out("poll = %d %s\n", r, pollbits(hp.revents));
	close(pp[1]);
	hp.fd = pp[0];
	hp.events = POLLIN;
	r = poll(&hp, 1, 1000);
	out("pipe writer closed: poll = %d %s\n", r, pollbits(hp.revents));
	return finish();
}

/* Signals interrupting blocking socket calls (SIGALRM from alarm/setitimer): without SA_RESTART the
 * call fails with EINTR; with SA_RESTART recv/accept are restarted and get what arrives later, except
 * with SO_RCVTIMEO set (EINTR, as the kernel does) and for poll/select/epoll_wait (never restarted);
 * signal() installs a restarting handler; a MSG_WAITALL recv interrupted after some data returns it. */
#include "common.h"
#include <sys/epoll.h>
#include <sys/select.h>

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void handler(int restart)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = restart ? SA_RESTART : 0;
	if (sigaction(SIGALRM, &sa, NULL) < 0)
		die("sigaction");
}

static void arm_ms(int ms)
{
	struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };
	if (setitimer(ITIMER_REAL, &it, NULL) < 0)
		die("setitimer");
}

struct late {
	int fd, port, delay_ms, tcp_connect;
	const char *msg;
};

/* late_sender runs with SIGALRM blocked, so the process-directed signal goes to the main thread. */
static void *late_sender(void *arg)
{
	struct late *l = arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	msleep(l->delay_ms);
	if (l->tcp_connect) {
		int c = tcp_connect_port(l->port);
		close(c);
	} else if (l->port) {
		udp_send_to(l->fd, l->msg, strlen(l->msg), l->port);
	} else {
		send(l->fd, l->msg, strlen(l->msg), 0);
	}
	return NULL;
}

static pthread_t start_late(struct late *l)
{
	pthread_t th;
	pthread_create(&th, NULL, late_sender, l);
	return th;
}

int main(void)
{
	char buf[128];
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r);
	long n;

	out("-- udp recv, no SA_RESTART\n");
	handler(0);
	arm_ms(200);
	E("recv", recv(r, buf, sizeof buf, 0), -1, EINTR);
	out("alarms = %d\n", (int)alarms);

	out("-- udp recv, SA_RESTART\n");
	handler(1);
	struct late l = { s, rp, 500, 0, "after-restart" };
	pthread_t th = start_late(&l);
	arm_ms(200);
	n = E("recv", recv(r, buf, sizeof buf, 0), 13, 0);
	show("data", buf, n);
	out("alarms = %d\n", (int)alarms);
	pthread_join(th, NULL);

	out("-- udp recvfrom via alarm(), signal() restarts\n");
	signal(SIGALRM, on_alarm);
	l.delay_ms = 1300;
	l.msg = "signal-restart";
	th = start_late(&l);
	alarm(1);
	n = E("recvfrom", recvfrom(r, buf, sizeof buf, 0, NULL, NULL), 14, 0);
	out("alarms = %d\n", (int)alarms);
	pthread_join(th, NULL);

	out("-- udp recv, SA_RESTART and SO_RCVTIMEO\n");
	handler(1);
	struct timeval tv = { 5, 0 };
	setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	arm_ms(200);
	double t0 = now_s();
	E("recv", recv(r, buf, sizeof buf, 0), -1, EINTR);
	CHECK("returned at the signal, not the timeout", now_s() - t0 < 2.0);
	out("alarms = %d\n", (int)alarms);
	tv.tv_sec = 0;
	setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

	out("-- tcp recv\n");
	int c, a;
	tcp_pair(&c, &a);
	handler(0);
	arm_ms(200);
	E("recv no restart", recv(a, buf, sizeof buf, 0), -1, EINTR);
	handler(1);
	struct late lt = { c, 0, 500, 0, "tcp-late" };
	th = start_late(&lt);
	arm_ms(200);
	n = E("recv restart", recv(a, buf, sizeof buf, 0), 8, 0);
	show("data", buf, n);
	pthread_join(th, NULL);
	out("alarms = %d\n", (int)alarms);

	out("-- tcp recv MSG_WAITALL interrupted with partial data\n");
	handler(0);
	send(c, "part", 4, 0);
	arm_ms(200);
	E("recv waitall 100", recv(a, buf, 100, MSG_WAITALL), 4, 0);
	out("alarms = %d\n", (int)alarms);

	out("-- accept\n");
	int lis = tcp_listener(0);
	handler(0);
	arm_ms(200);
	E("accept no restart", accept(lis, NULL, NULL), -1, EINTR);
	handler(1);
	struct late la = { -1, port_of(lis), 500, 1, "" };
	th = start_late(&la);
	arm_ms(200);
	int ac = (int)OK("accept restart", accept(lis, NULL, NULL));
	pthread_join(th, NULL);
	close(ac);
	out("alarms = %d\n", (int)alarms);

	out("-- iomux is never restarted\n");
	handler(1);
	struct pollfd p = { r, POLLIN, 0 };
	arm_ms(200);
	E("poll", poll(&p, 1, 5000), -1, EINTR);
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(r, &rs);
	struct timeval stv = { 5, 0 };
	arm_ms(200);
	E("select", select(r + 1, &rs, NULL, NULL, &stv), -1, EINTR);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN }, evs[2];
	epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev);
	arm_ms(200);
	E("epoll_wait", epoll_wait(ep, evs, 2, 5000), -1, EINTR);
	out("alarms = %d\n", (int)alarms);

	out("-- blocked tcp send interrupted after a partial write\n");
	handler(0);
	int small = 4096;
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	static char big[8 << 20];
	arm_ms(200);
	n = send(c, big, sizeof big, MSG_NOSIGNAL);
	CHECK("send returned a partial count", n > 0 && n < (long)sizeof big);
	arm_ms(200);
	E("send on a full buffer", send(c, big, sizeof big, MSG_NOSIGNAL), -1, EINTR);
	out("alarms = %d\n", (int)alarms);
	close(c);
	close(a);
	close(lis);
	close(ep);
	close(r);
	close(s);
	return finish();
}

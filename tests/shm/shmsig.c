/* shmsig: blocking waits on a UDP socket bound to 127.0.0.1 (a ring socket under GOXIO_SHM=1)
 * end as the kernel ends them, for the shared-memory transport tests (tests/shm_test.go):
 *
 *   - a SIGALRM handler without SA_RESTART interrupts recvfrom, poll, epoll_wait and select
 *     with EINTR;
 *   - with SA_RESTART recvfrom keeps waiting and returns the datagram that a thread of the same
 *     process sends later; poll, epoll_wait and select still end with EINTR (never restarted);
 *   - SO_RCVTIMEO ends recvfrom with EAGAIN after its time; the timeouts of poll, epoll_wait and
 *     select end them with 0.
 *
 * Prints one line per case, "case NAME: ... ok" or "case NAME: ... FAIL (why)", then
 * "all ok" or "failed N". A watchdog thread prints "HANG in case NAME" and exits with 4 when a
 * case waits more than 5 s. Exit code: 0 all cases passed, 1 some failed, 2 set-up error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static atomic_int handled;
static const char *_Atomic current = "start";
static _Atomic double case_start;
static int failed;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_alarm(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		usleep(50000);
		if (now_ms() - atomic_load(&case_start) > 5000) {
			printf("HANG in case %s (no return after 5 s)\n", atomic_load(&current));
			fflush(stdout);
			_exit(4);
		}
	}
	return NULL;
}

static void handler(int restart)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) < 0) {
		perror("sigaction");
		exit(2);
	}
}

static void alarm_in(int ms)
{
	struct itimerval it = {.it_value = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
}

static void begin(const char *name)
{
	atomic_store(&handled, 0);
	atomic_store(&current, name);
	atomic_store(&case_start, now_ms());
}

/* end checks the result of one case: want r (or -1 and werr), elapsed within [lo, hi] ms. */
static void end(const char *name, long r, int err, long want, int werr, double lo, double hi, int whandled)
{
	double el = now_ms() - atomic_load(&case_start);
	const char *why = NULL;
	if (r != want)
		why = "wrong result";
	else if (want < 0 && err != werr)
		why = "wrong errno";
	else if (el < lo || el > hi)
		why = "elapsed out of bounds";
	else if (whandled >= 0 && atomic_load(&handled) != whandled)
		why = "handler count";
	printf("case %s: r=%ld errno=%s elapsed_ms=%.0f (want %ld %s in [%.0f, %.0f]) handled=%d %s%s%s\n", name, r,
	       r < 0 ? strerrorname_np(err) : "0", el, want, want < 0 ? strerrorname_np(werr) : "", lo, hi,
	       atomic_load(&handled), why ? "FAIL (" : "ok", why ? why : "", why ? ")" : "");
	fflush(stdout);
	if (why)
		failed++;
	atomic_store(&case_start, now_ms() + 1e9);
}

static int udp_bound(struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	socklen_t al = sizeof *a;
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof *a) < 0 || getsockname(fd, (struct sockaddr *)a, &al) < 0) {
		perror("udp socket");
		exit(2);
	}
	return fd;
}

struct later {
	int fd;
	struct sockaddr_in to;
	int ms;
};

static void *send_later(void *arg)
{
	struct later *l = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	usleep(l->ms * 1000);
	if (sendto(l->fd, "late", 4, 0, (struct sockaddr *)&l->to, sizeof l->to) != 4)
		perror("sendto later");
	return NULL;
}

static void set_rcvtimeo(int fd, int ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	atomic_store(&case_start, now_ms() + 1e9);
	pthread_t wd;
	{
		/* The watchdog never takes SIGALRM. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		pthread_create(&wd, NULL, watchdog, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	struct sockaddr_in ra, sa;
	int rfd = udp_bound(&ra);
	int sfd = udp_bound(&sa);
	char buf[64];
	long r;
	int e;

	/* recvfrom */
	handler(0);
	begin("recvfrom-eintr");
	alarm_in(300);
	r = recvfrom(rfd, buf, sizeof buf, 0, NULL, NULL);
	e = errno;
	end("recvfrom-eintr", r, e, -1, EINTR, 250, 3000, 1);

	handler(1);
	begin("recvfrom-sa-restart");
	struct later l = {.fd = sfd, .to = ra, .ms = 900};
	pthread_t th;
	pthread_create(&th, NULL, send_later, &l);
	alarm_in(300);
	r = recvfrom(rfd, buf, sizeof buf, 0, NULL, NULL);
	e = errno;
	end("recvfrom-sa-restart", r, e, 4, 0, 850, 4000, 1);
	pthread_join(th, NULL);

	set_rcvtimeo(rfd, 500);
	begin("recvfrom-so-rcvtimeo");
	r = recvfrom(rfd, buf, sizeof buf, 0, NULL, NULL);
	e = errno;
	end("recvfrom-so-rcvtimeo", r, e, -1, EAGAIN, 450, 3000, 0);
	set_rcvtimeo(rfd, 0);

	/* poll */
	struct pollfd p = {.fd = rfd, .events = POLLIN};
	for (int restart = 0; restart < 2; restart++) {
		const char *name = restart ? "poll-eintr-sa-restart" : "poll-eintr";
		handler(restart);
		begin(name);
		alarm_in(300);
		r = poll(&p, 1, -1);
		e = errno;
		end(name, r, e, -1, EINTR, 250, 3000, 1);
	}
	begin("poll-timeout");
	r = poll(&p, 1, 500);
	e = errno;
	end("poll-timeout", r, e, 0, 0, 450, 3000, 0);

	/* epoll_wait */
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = rfd}, got;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, rfd, &ev) < 0) {
		perror("epoll");
		return 2;
	}
	for (int restart = 0; restart < 2; restart++) {
		const char *name = restart ? "epoll_wait-eintr-sa-restart" : "epoll_wait-eintr";
		handler(restart);
		begin(name);
		alarm_in(300);
		r = epoll_wait(ep, &got, 1, -1);
		e = errno;
		end(name, r, e, -1, EINTR, 250, 3000, 1);
	}
	begin("epoll_wait-timeout");
	r = epoll_wait(ep, &got, 1, 500);
	e = errno;
	end("epoll_wait-timeout", r, e, 0, 0, 450, 3000, 0);

	/* select */
	for (int restart = 0; restart < 2; restart++) {
		const char *name = restart ? "select-eintr-sa-restart" : "select-eintr";
		handler(restart);
		fd_set rs;
		FD_ZERO(&rs);
		FD_SET(rfd, &rs);
		begin(name);
		alarm_in(300);
		r = select(rfd + 1, &rs, NULL, NULL, NULL);
		e = errno;
		end(name, r, e, -1, EINTR, 250, 3000, 1);
	}
	{
		fd_set rs;
		FD_ZERO(&rs);
		FD_SET(rfd, &rs);
		struct timeval tv = {.tv_usec = 500000};
		begin("select-timeout");
		r = select(rfd + 1, &rs, NULL, NULL, &tv);
		e = errno;
		end("select-timeout", r, e, 0, 0, 450, 3000, 0);
	}

	/* Data still arrives after all that: one datagram through recvfrom, then through poll. */
	handler(0);
	begin("recvfrom-after");
	if (sendto(sfd, "again", 5, 0, (struct sockaddr *)&ra, sizeof ra) != 5)
		perror("sendto");
	r = recvfrom(rfd, buf, sizeof buf, 0, NULL, NULL);
	e = errno;
	end("recvfrom-after", r, e, 5, 0, 0, 3000, 0);

	if (failed) {
		printf("failed %d\n", failed);
		return 1;
	}
	printf("all ok\n");
	return 0;
}

/* A timer signal at a different moment of each blocking wait on a UDP socket (recv, poll,
 * epoll_wait, select), its handler without SA_RESTART: every wait ends with EINTR, as the kernel's
 * does, wherever the signal lands in it. Under goxio the wait runs in the engine, where the
 * handler is deferred until the call is back in C (shim/preload/signal.c): a signal that came
 * before the wait took its first look, between two loads of its counters, or between its last
 * look and its sleep in the kernel was missed, and the call waited for the next signal (CI's
 * TestShmSignals hung so once in a few runs). A periodic timer every 100 ms ends a wait that
 * missed its signal, so such a miss shows as a slow wait instead of a hang; misses are counted on
 * stderr (a signal delivered before the call began, as after a preemption in setitimer, is a miss
 * in the kernel too, so the transcript does not show their number). */
#include "common.h"
#include <sys/epoll.h>
#include <sys/select.h>

#define ROUNDS 1200

static volatile sig_atomic_t hits;

static void on_alarm(int s)
{
	(void)s;
	hits++;
}

static long now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

int main(void)
{
	int r = udp_bound(0), s = udp_bound(0);
	udp_warm(r, s);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm; /* no SA_RESTART */
	if (sigaction(SIGALRM, &sa, NULL) < 0)
		die("sigaction");
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = r}, got;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev) < 0)
		die("epoll");
	static const char *const kinds[4] = {"recv", "poll", "epoll_wait", "select"};
	int eintr[4] = {0}, other[4] = {0}, late[4] = {0};
	unsigned seed = 1;
	for (int i = 0; i < ROUNDS; i++) {
		seed = seed * 1103515245 + 12345;
		/* first signal 40-340 us into the wait (its spinning, its sleep and in between),
		 * then every 100 ms */
		struct itimerval it = {{0, 100000}, {0, 40 + (seed >> 8) % 300}}, off = {{0, 0}, {0, 0}};
		char b[64];
		int k = i % 4;
		long rr;
		hits = 0;
		long t0 = now_us();
		setitimer(ITIMER_REAL, &it, NULL);
		if (k == 0) {
			rr = recv(r, b, sizeof b, 0);
		} else if (k == 1) {
			struct pollfd p = {r, POLLIN, 0};
			rr = poll(&p, 1, -1);
		} else if (k == 2) {
			rr = epoll_wait(ep, &got, 1, -1);
		} else {
			fd_set f;
			FD_ZERO(&f);
			FD_SET(r, &f);
			rr = select(r + 1, &f, NULL, NULL, NULL);
		}
		int e = errno;
		long dt = now_us() - t0;
		setitimer(ITIMER_REAL, &off, NULL);
		if (rr == -1 && e == EINTR)
			eintr[k]++;
		else
			other[k]++;
		if (dt > 50000)
			late[k]++;
	}
	for (int k = 0; k < 4; k++) {
		out("%s: EINTR %d of %d, other %d\n", kinds[k], eintr[k], ROUNDS / 4, other[k]);
		CHECK(kinds[k], eintr[k] == ROUNDS / 4);
		fprintf(stderr, "%s: %d waits ended by the 100 ms timer\n", kinds[k], late[k]);
	}
	return finish();
}

/* early_wait: blocking receives of UDP sockets in their early phase, which poll before they sleep
 * under goxio (shim/preload/early_wait.c), against signals, timeouts and O_NONBLOCK.
 *
 *   early_wait server PORT      on 127.0.0.1:PORT: "echo" is answered at once, "late" after 5 ms,
 *                               "silent" never; "quit" ends it.
 *   early_wait client PORT CASE each round a new socket (socket, sendto, recv, close), as a
 *                               client that opens a socket per request:
 *     echo N       N rounds of "echo": each answer must be the request;
 *     intr         a SIGALRM handler without SA_RESTART fires 30-120 us after the alarm is set
 *                  (10 delays, 5 rounds each), in the receive of a "silent" request (SO_RCVTIMEO
 *                  of 300 ms as a bound): each receive the alarm reached must end with EINTR;
 *     restart      the handler with SA_RESTART, a "late" request, no timeout: each receive must
 *                  return the answer (the kernel restarts the wait);
 *     restart_timeo  SA_RESTART with SO_RCVTIMEO (300 ms) and a "silent" request: each receive
 *                  the alarm reached must end with EINTR (a socket wait with a timeout is not
 *                  restarted: the kernel's sock_intr_errno);
 *     nonblock     an O_NONBLOCK socket and a "silent" request, 20 rounds: EAGAIN each.
 * A receive the alarm reached is one whose handler ran after the clock read just before the
 * call (one that ran before it: the wait is not the signal's, the round ends with the timeout
 * and is counted apart). A round whose result is wrong is tried again, up to twice (round_tries
 * says why). Prints "CASE ok ROUNDS reached=R early=E retried=T calls=C loaded=L" (C: the
 * thread's calls into goxio's engine, -1 without the library; L: whether libgoxio-engine.so is
 * mapped) or "CASE wrong ROUND (alarm at US us): RESULT, want WANT" with status 1. Any failure
 * of another call prints "error ..." and exits with status 1.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "progs.h"

static volatile sig_atomic_t fired;

static void serve(int port) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = lo(port);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0)
		die("server bind");
	for (;;) {
		char b[64];
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(s, b, sizeof b - 1, 0, (struct sockaddr *)&from, &fl);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("server recvfrom");
		}
		b[n] = 0;
		if (strcmp(b, "quit") == 0)
			exit(0);
		if (strcmp(b, "silent") == 0)
			continue;
		if (strcmp(b, "late") == 0)
			usleep(5000);
		if (sendto(s, b, (size_t)n, 0, (struct sockaddr *)&from, fl) != n)
			die("server sendto");
	}
}

static uint64_t mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t fired_at;
static void on_alarm(int sig) {
	fired_at = mono_ns();
	fired++;
}

static void handler(int restart) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	if (sigaction(SIGALRM, &sa, NULL) != 0)
		die("sigaction");
}

static void alarm_in(long us) {
	struct itimerval it = {{0, 0}, {0, us}};
	if (setitimer(ITIMER_REAL, &it, NULL) != 0)
		die("setitimer");
}

static int rounds, reached, early, retried;
static char wrong[96];

/* round_once makes one socket, sends what, and receives with the socket's options and an alarm
 * us microseconds in (us < 0: none); want is the result a receive the alarm reached (or any,
 * without an alarm) must have: "got X", "EINTR" or "EAGAIN". 1 when the result was another
 * (described in wrong). */
static int round_once(struct sockaddr_in *srv, const char *what, long us, int nonblock, int timeo,
		       const char *want) {
	int s = socket(AF_INET, SOCK_DGRAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (s < 0)
		die("socket");
	if (timeo) {
		struct timeval tv = {0, 300000};
		if (setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
			die("SO_RCVTIMEO");
	}
	if (sendto(s, what, strlen(what), 0, (struct sockaddr *)srv, sizeof *srv) != (ssize_t)strlen(what))
		die("sendto");
	char b[64];
	fired = 0;
	if (us >= 0)
		alarm_in(us);
	uint64_t before = mono_ns();
	ssize_t n = recv(s, b, 8, 0);
	int e = errno;
	if (us >= 0)
		while (!fired) /* the alarm must not land in the next round */
			usleep(50);
	char r[32];
	if (n >= 0) {
		b[n] = 0;
		snprintf(r, sizeof r, "got %.8s", b);
	} else
		snprintf(r, sizeof r, "%s", e == EINTR ? "EINTR" : e == EAGAIN ? "EAGAIN" : strerror(e));
	close(s);
	if (us >= 0 && fired_at < before) {
		early++; /* the handler ran before the call: its wait is the timeout's */
		return 0;
	}
	if (strcmp(r, want) != 0) {
		snprintf(wrong, sizeof wrong, "(alarm at %ld us): %s, want %s", us, r, want);
		return 1;
	}
	reached += us >= 0;
	return 0;
}

/* round_tries is a round, tried again up to twice when its result was wrong: a thread that lost
 * its CPU between the clock read and the system call (a loaded machine) takes the handler before
 * the call, which then waits for its timeout, with or without goxio; a receive that ignores the
 * handler does so at every try. */
static void round_tries(const char *c, struct sockaddr_in *srv, const char *what, long us, int nonblock, int timeo,
			const char *want) {
	rounds++;
	for (int k = 0; k < 3; k++) {
		if (round_once(srv, what, us, nonblock, timeo, want) == 0)
			return;
		retried++;
	}
	printf("%s wrong %d %s\n", c, rounds, wrong);
	exit(1);
}

int main(int argc, char **argv) {
	progs_init();
	if (argc >= 3 && strcmp(argv[1], "server") == 0) {
		serve(atoi(argv[2]));
		return 0;
	}
	if (argc < 4 || strcmp(argv[1], "client") != 0) {
		fprintf(stderr, "usage: early_wait server PORT | early_wait client PORT CASE [N]\n");
		return 2;
	}
	struct sockaddr_in srv = lo(atoi(argv[2]));
	const char *c = argv[3];
	if (strcmp(c, "echo") == 0) {
		int n = argc > 4 ? atoi(argv[4]) : 10;
		for (int k = 0; k < n; k++)
			round_tries(c, &srv, "echo", -1, 0, 0, "got echo");
	} else if (strcmp(c, "intr") == 0 || strcmp(c, "restart") == 0 || strcmp(c, "restart_timeo") == 0) {
		int restart = strcmp(c, "intr") != 0, late = strcmp(c, "restart") == 0;
		handler(restart);
		for (long us = 30; us <= 120; us += 10)
			for (int k = 0; k < 5; k++)
				round_tries(c, &srv, late ? "late" : "silent", us, 0, !late, late ? "got late" : "EINTR");
	} else if (strcmp(c, "nonblock") == 0) {
		for (int k = 0; k < 20; k++)
			round_tries(c, &srv, "silent", -1, 1, 0, "EAGAIN");
	} else {
		fprintf(stderr, "early_wait: unknown case %s\n", c);
		return 2;
	}
	printf("%s ok %d reached=%d early=%d retried=%d calls=%ld loaded=%d\n", c, rounds, reached, early, retried, calls(),
	       engine_loaded());
	return 0;
}

/*
 * altstack: a thread installs an alternate signal stack, makes its first socket calls (under goxio
 * they call into the engine, whose Go runtime takes that stack as the thread's), then disables it,
 * as CPython's faulthandler does (enabled at start, disabled at exit), and keeps making socket
 * calls while signals arrive (SIGURG, the Go runtime's own preemption signal, and SIGUSR1 with a
 * handler). Then the same with a stack installed after the first calls.
 * Prints "view disabled" when sigaltstack reports the stack disabled, "usr1 N" with the handler's
 * count, and "ok" at the end; any failure: "error ..." and exit status 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1;
static volatile int done;
static pthread_t main_thread;

static void die(const char *what) {
	printf("error %s: %s\n", what, strerror(errno));
	exit(1);
}

static void on_usr1(int sig) {
	(void)sig;
	usr1++;
}

static void *signaller(void *arg) {
	(void)arg;
	struct timespec ts = {0, 20000};
	for (int i = 0; i < 40000 && !done; i++) {
		pthread_kill(main_thread, i % 8 == 0 ? SIGUSR1 : SIGURG);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void echo(int s, const struct sockaddr_in *a) {
	char b[16] = "altstack", r[16];
	if (sendto(s, b, sizeof b, 0, (const struct sockaddr *)a, sizeof *a) != sizeof b)
		die("sendto");
	if (recv(s, r, sizeof r, 0) != sizeof r || memcmp(b, r, sizeof b) != 0)
		die("recv");
}

/* signals makes socket calls for a while with signals arriving. */
static void signals(int s, const struct sockaddr_in *a) {
	pthread_t t;
	done = 0;
	if (pthread_create(&t, NULL, signaller, NULL) != 0)
		die("pthread_create");
	for (int i = 0; i < 20000; i++) {
		int type;
		socklen_t tl = sizeof type;
		if (getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_DGRAM)
			die("getsockopt");
		if (i % 100 == 0)
			echo(s, a);
	}
	done = 1;
	pthread_join(t, NULL);
}

int main(void) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	main_thread = pthread_self();
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_ONSTACK | SA_RESTART};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		die("sigaction");
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof a;
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(s, (struct sockaddr *)&a, &al) != 0)
		die("socket");
	for (int round = 0; round < 2; round++) {
		/* faulthandler.enable(): its own stack, keeping the old one (none) to restore; in the
		 * first round before this thread's first calls into the engine, then after them */
		stack_t mine = {.ss_sp = malloc(SIGSTKSZ * 4), .ss_size = SIGSTKSZ * 4}, old;
		if (mine.ss_sp == NULL || sigaltstack(&mine, &old) != 0)
			die("sigaltstack install");
		if (!(old.ss_flags & SS_DISABLE))
			printf("round %d: a stack was there before\n", round);
		echo(s, &a);
		/* faulthandler.disable(): the old stack back, here none */
		if (sigaltstack(&old, NULL) != 0)
			die("sigaltstack restore");
		stack_t now;
		if (sigaltstack(NULL, &now) != 0)
			die("sigaltstack query");
		printf("round %d: %s\n", round, (now.ss_flags & SS_DISABLE) ? "disabled" : "not disabled");
		signals(s, &a);
	}

	printf("usr1 %s\n", usr1 > 0 ? "some" : "none");
	printf("ok\n");
	return 0;
}

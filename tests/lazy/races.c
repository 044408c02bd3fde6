/* The engine's late load under pressure: NTHREADS threads make their first data call at the same
 * moment (each on its own UDP pair made before), while one thread storms the process with
 * signals and another forks during the load; a first data call from a signal handler goes to the
 * kernel; a thread blocked in accept on a listener made before the load gets, after it, a
 * connection that works. Prints one transcript that must not depend on the library. */
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
#include <sys/wait.h>
#include <unistd.h>

#define NTHREADS 16

static int rx[NTHREADS], tx[NTHREADS];
static pthread_barrier_t go;
static volatile sig_atomic_t handled, storming = 1;
static int hs_rx, hs_tx;

static int bound_udp(void) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0)
		exit(10);
	return s;
}

static void pair(int *r, int *t) {
	*r = bound_udp();
	*t = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a;
	socklen_t l = sizeof a;
	getsockname(*r, (struct sockaddr *)&a, &l);
	if (connect(*t, (struct sockaddr *)&a, sizeof a) < 0)
		exit(11);
	struct timeval tv = {10, 0};
	setsockopt(*r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static void on_usr1(int sig) {
	(void)sig;
	handled++;
}

static struct sockaddr_in hs_addr;

static void on_usr2(int sig) {
	(void)sig;
	/* a data call from a handler, before the engine is loaded: the kernel's (an unconnected
	 * socket: a connected one to a port without a goxio socket is a plain one from its connect) */
	if (sendto(hs_tx, "h", 1, 0, (struct sockaddr *)&hs_addr, sizeof hs_addr) != 1)
		_exit(12);
}

static void *worker(void *p) {
	int i = (int)(long)p;
	char msg[32], buf[32];
	int n = snprintf(msg, sizeof msg, "thread %d", i);
	pthread_barrier_wait(&go);
	ssize_t s = send(tx[i], msg, (size_t)n, 0);
	if (s != n) {
		/* stderr is not part of the transcript: it says why, for the test's log */
		fprintf(stderr, "races: thread %d: send = %zd (%s)\n", i, s, strerror(errno));
		return (void *)1;
	}
	ssize_t r = recv(rx[i], buf, sizeof buf, 0);
	if (r != n || memcmp(buf, msg, (size_t)n) != 0) {
		fprintf(stderr, "races: thread %d: recv = %zd (%s)\n", i, r, r < 0 ? strerror(errno) : "wrong bytes");
		return (void *)2;
	}
	return NULL;
}

static int lst;

static void *acceptor(void *p) {
	(void)p;
	int c = accept(lst, NULL, NULL); /* blocks in the kernel across the load */
	char buf[16];
	ssize_t n = c < 0 ? -1 : recv(c, buf, sizeof buf, 0);
	if (n > 0 && send(c, buf, (size_t)n, 0) != n)
		n = -2;
	if (c >= 0)
		close(c);
	return (void *)n;
}

static void *storm(void *p) {
	(void)p;
	while (storming) {
		kill(getpid(), SIGUSR1);
		usleep(50);
	}
	return NULL;
}

static void *forker(void *p) {
	(void)p;
	pthread_barrier_wait(&go);
	pid_t pid = fork();
	if (pid == 0) {
		int r, t;
		pair(&r, &t);
		char buf[8];
		_exit(send(t, "child", 5, 0) == 5 && recv(r, buf, sizeof buf, 0) == 5 ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return (void *)(long)(WIFEXITED(st) ? WEXITSTATUS(st) : 99);
}

int main(void) {
	setvbuf(stdout, NULL, _IONBF, 0);
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);

	lst = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in la = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t ll = sizeof la;
	if (bind(lst, (struct sockaddr *)&la, sizeof la) < 0 || listen(lst, 4) < 0 ||
	    getsockname(lst, (struct sockaddr *)&la, &ll) < 0)
		exit(13);
	pthread_t ac;
	pthread_create(&ac, NULL, acceptor, NULL);

	hs_rx = bound_udp();
	hs_tx = socket(AF_INET, SOCK_DGRAM, 0);
	socklen_t hl = sizeof hs_addr;
	getsockname(hs_rx, (struct sockaddr *)&hs_addr, &hl);
	struct timeval tv = {10, 0};
	setsockopt(hs_rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	raise(SIGUSR2);
	char b[4];
	printf("send from a handler, received = %zd\n", recv(hs_rx, b, sizeof b, 0));

	for (int i = 0; i < NTHREADS; i++)
		pair(&rx[i], &tx[i]);
	pthread_barrier_init(&go, NULL, NTHREADS + 1);
	pthread_t th[NTHREADS], st, fk;
	pthread_create(&st, NULL, storm, NULL);
	for (int i = 0; i < NTHREADS - 1; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	pthread_create(&fk, NULL, forker, NULL);
	int bad = 0;
	void *ret;
	/* the last worker runs on the main thread */
	ret = worker((void *)(long)(NTHREADS - 1));
	bad += ret != NULL;
	for (int i = 0; i < NTHREADS - 1; i++) {
		pthread_join(th[i], &ret);
		bad += ret != NULL;
	}
	pthread_join(fk, &ret);
	printf("child forked during the load exited %ld\n", (long)ret);
	storming = 0;
	pthread_join(st, NULL);
	printf("threads with a wrong echo: %d of %d\n", bad, NTHREADS);
	int cs = socket(AF_INET, SOCK_STREAM, 0);
	char eb[16];
	if (connect(cs, (struct sockaddr *)&la, sizeof la) < 0 || send(cs, "accepted", 8, 0) != 8)
		exit(14);
	ssize_t en = recv(cs, eb, sizeof eb, 0);
	pthread_join(ac, &ret);
	printf("accept blocked across the load: served %ld, echo %zd\n", (long)ret, en);
	close(cs);
	printf("signals handled: %s\n", handled > 0 ? "some" : "none");
	return 0;
}

/*
 * calls: time a tight loop over one libc call, to measure what LD_PRELOAD
 * interposition adds to calls that goxio passes through (or routes through
 * its engine).
 *
 * usage: calls CASE N
 *   fcntl-pipe      fcntl(F_GETFL) on the read end of a pipe
 *   sockopt-unix    getsockopt(SO_TYPE) on an AF_UNIX datagram socket
 *   sockopt-udp-os  getsockopt(SO_TYPE) on an AF_INET UDP socket bound to
 *                   127.0.0.1:0 (run it with a rule `use os udp_receiver *:*`)
 *   sockopt-udp     getsockopt(SO_TYPE) on an unbound AF_INET UDP socket,
 *                   an offload candidate: through the engine (C->Go->kernel)
 *
 * With CALLS_IDLE_THREAD=1 in the environment the program first starts one
 * thread that sleeps for ever: a process with more than one thread pays more
 * per fd system call in the kernel (fdget takes a reference on the file when
 * the fd table is shared), which any preload library with a runtime thread
 * (Go's) cannot avoid. That variant separates this cost from the library's own.
 *
 * The N calls run in BATCHES batches; the program prints one line
 * "CASE N median_ns min_ns" on stdout: the median and the lowest per-call cost
 * of the batches, so that a burst of load from another process on the machine
 * moves one batch, not the result. Every call's result is checked, so a
 * library that breaks the call fails the benchmark instead of making it fast.
 * Bounded: N is capped at 100M.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_N 100000000L
#define WARMUP 10000L
#define BATCHES 21

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* loop_fcntl returns -1 on the first call whose result is wrong. */
static int loop_fcntl(int fd, long n)
{
	for (long i = 0; i < n; i++) {
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || (fl & O_ACCMODE) != O_RDONLY)
			return -1;
	}
	return 0;
}

/* loop_sockopt returns -1 on the first call whose result is wrong. */
static int loop_sockopt(int fd, int want, long n)
{
	for (long i = 0; i < n; i++) {
		int type = 0;
		socklen_t len = sizeof(type);
		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
		    type != want || len != sizeof(type))
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: calls fcntl-pipe|sockopt-unix|sockopt-udp-os|sockopt-udp N\n");
		return 2;
	}
	const char *name = argv[1];
	long n = strtol(argv[2], NULL, 10);
	if (n < BATCHES || n > MAX_N) {
		fprintf(stderr, "calls: N must be in %d..%ld\n", BATCHES, MAX_N);
		return 2;
	}

	const char *idle = getenv("CALLS_IDLE_THREAD");
	if (idle != NULL && strcmp(idle, "1") == 0) {
		pthread_t t;
		int err = pthread_create(&t, NULL, sleeper, NULL);
		if (err != 0) {
			fprintf(stderr, "calls: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}

	int fd = -1, pfd[2];
	int is_fcntl = 0;
	if (strcmp(name, "fcntl-pipe") == 0) {
		if (pipe(pfd) != 0)
			die("pipe");
		fd = pfd[0];
		is_fcntl = 1;
	} else if (strcmp(name, "sockopt-unix") == 0) {
		fd = socket(AF_UNIX, SOCK_DGRAM, 0);
		if (fd < 0)
			die("socket AF_UNIX");
	} else if (strcmp(name, "sockopt-udp-os") == 0 || strcmp(name, "sockopt-udp") == 0) {
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0)
			die("socket AF_INET");
		if (strcmp(name, "sockopt-udp-os") == 0) {
			struct sockaddr_in sa;
			memset(&sa, 0, sizeof(sa));
			sa.sin_family = AF_INET;
			sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
				die("bind 127.0.0.1:0");
		}
	} else {
		fprintf(stderr, "calls: unknown case %s\n", name);
		return 2;
	}

	int rc = is_fcntl ? loop_fcntl(fd, WARMUP) : loop_sockopt(fd, SOCK_DGRAM, WARMUP);
	long per = n / BATCHES;
	double ns[BATCHES];
	for (int b = 0; b < BATCHES && rc == 0; b++) {
		double t0 = now_ns();
		rc = is_fcntl ? loop_fcntl(fd, per) : loop_sockopt(fd, SOCK_DGRAM, per);
		ns[b] = (now_ns() - t0) / (double)per;
	}
	if (rc != 0) {
		fprintf(stderr, "calls: %s returned a wrong result\n", name);
		return 1;
	}
	qsort(ns, BATCHES, sizeof(ns[0]), cmp_double);
	printf("%s %ld %.2f %.2f\n", name, per * BATCHES, ns[BATCHES / 2], ns[0]);
	return 0;
}

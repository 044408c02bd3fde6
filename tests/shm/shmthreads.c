/*
 * shmthreads: N threads each send one checked datagram to themselves over loopback UDP (through
 * goxio's rings under GOXIO_SHM=1), then the program prints which of its threads run with the
 * SCHED_IDLE policy and which have another timer slack than the main thread (as far as the
 * process may read them):
 * "threads=N idle= TID TID... slack= TID...". Used by TestShmSysmonThreads: the library gives the
 * Go runtime's monitor thread SCHED_IDLE (and, with CAP_SYS_NICE, a wide timer slack) only while
 * few threads call into it.
 *
 * usage: shmthreads N
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SCHED_IDLE
#define SCHED_IDLE 5
#endif

static void die(const char *what) {
	perror(what);
	exit(2);
}

/* slack returns thread tid's timer slack in ns (/proc/<tid>/timerslack_ns), -1 if unreadable. */
static long slack(int tid) {
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/timerslack_ns", tid);
	FILE *f = fopen(path, "r");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void *one(void *arg) {
	long id = (long)arg;
	int r = socket(AF_INET, SOCK_DGRAM, 0), s = socket(AF_INET, SOCK_DGRAM, 0);
	if (r < 0 || s < 0)
		die("socket");
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (bind(r, (void *)&a, sizeof a) != 0 || getsockname(r, (void *)&a, &al) != 0)
		die("bind");
	char out[32], in[32] = {0};
	int n = snprintf(out, sizeof out, "thread %ld", id);
	if (sendto(s, out, n, 0, (void *)&a, sizeof a) != n)
		die("sendto");
	if (recv(r, in, sizeof in, 0) != n || memcmp(in, out, n) != 0) {
		fprintf(stderr, "thread %ld: wrong datagram \"%s\"\n", id, in);
		exit(3);
	}
	close(r);
	close(s);
	return NULL;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 1;
	if (n < 1 || n > 256) {
		fprintf(stderr, "usage: shmthreads N (1..256)\n");
		return 2;
	}
	pthread_t t[256];
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, one, (void *)i) != 0)
			die("pthread_create");
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	long own = slack(getpid());
	DIR *d = opendir("/proc/self/task");
	if (!d)
		die("/proc/self/task");
	int tids[1024], nt = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL && nt < 1024;) {
		int tid = atoi(e->d_name);
		if (tid > 0)
			tids[nt++] = tid;
	}
	closedir(d);
	printf("threads=%d idle=", n);
	for (int i = 0; i < nt; i++)
		if (sched_getscheduler(tids[i]) == SCHED_IDLE)
			printf(" %d", tids[i]);
	printf(" slack=");
	for (int i = 0; i < nt; i++) {
		long v = slack(tids[i]); /* another thread's needs CAP_SYS_NICE to read: -1 */
		if (v >= 0 && v != own)
			printf(" %d", tids[i]);
	}
	printf("\n");
	return 0;
}

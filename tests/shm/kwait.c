/* kwait: a blocking receive on a ring socket whose datagrams come through the kernel waits for the
 * next one without entering goxio's engine (shim/preload/kwait.c) and ends as the kernel's
 * receive does.
 *
 *   kwait ROUNDS
 *
 * One process: a UDP socket r on 127.0.0.1 (a ring socket under goxio), received from by the main
 * thread; a helper thread sends through a kernel socket k the library never sees (made and used
 * through syscall(2)) after a delay, or signals the main thread. Printed, the same with and without
 * goxio but for the engine calls ("calls", the main thread's calls into the engine during the
 * receives, goxio_thread_engine_calls; -1 without the library):
 *   wait:    ROUNDS receives, each of a datagram sent 2 ms after it began: got, bad, calls;
 *   timeout: SO_RCVTIMEO 50 ms with nothing sent: EAGAIN after it, not long after;
 *   intr:    a handler without SA_RESTART runs 20 ms into a receive: EINTR (the datagram sent
 *            later is the next receive's);
 *   restart: a handler with SA_RESTART runs 20 ms into a receive of a socket without a timeout:
 *            the receive goes on and returns the datagram sent 60 ms in;
 *   timedrestart: the same with SO_RCVTIMEO 1 s: EINTR (the kernel does not restart a timed wait);
 *   ring:    a goxio sender in the helper thread sends 12 datagrams 3 ms apart (under goxio its
 *            first ones through the kernel, then through its ring, whose first record rings the
 *            doorbell the receive waits on): all received, in order, none waited for longer than
 *            the receive's 2 s SO_RCVTIMEO.
 * Any failure: "error ..." and exit status 1. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>

#include "progs.h"

static int k;
static struct sockaddr_in to;
static pthread_t main_thread;
static volatile sig_atomic_t handled;

/* what the helper does, one job at a time: after `send_ms` send one 64-byte datagram tagged seq
 * through k (or, with ring, `ring` datagrams through a goxio socket, ring_gap_ms apart); after
 * `kill_ms` (> 0) signal the main thread first */
static struct job {
	int send_ms, kill_ms, seq, ring, ring_gap_ms;
} job;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int pending, quit;

static void sleep_ms(int ms) {
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static long now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *helper(void *arg) {
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (!pending && !quit)
			pthread_cond_wait(&cv, &mu);
		struct job j = job;
		int q = quit;
		pthread_mutex_unlock(&mu);
		if (q)
			return NULL;
		int slept = 0;
		if (j.kill_ms > 0) {
			sleep_ms(j.kill_ms);
			slept = j.kill_ms;
			pthread_kill(main_thread, SIGUSR1);
		}
		if (j.ring > 0) {
			int s = socket(AF_INET, SOCK_DGRAM, 0);
			if (s < 0)
				die("ring sender");
			for (int i = 0; i < j.ring; i++) {
				unsigned char d[64];
				sleep_ms(j.ring_gap_ms);
				fill64(d, i, 3);
				if (sendto(s, d, 64, 0, (struct sockaddr *)&to, sizeof to) != 64)
					die("ring sendto");
			}
			close(s);
		} else {
			unsigned char d[64];
			sleep_ms(j.send_ms - slept);
			fill64(d, j.seq, 1);
			ksend(k, d, 64, &to);
		}
		pthread_mutex_lock(&mu);
		pending = 0;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
}

static void start(struct job j) {
	pthread_mutex_lock(&mu);
	job = j;
	pending = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void finish(void) {
	pthread_mutex_lock(&mu);
	while (pending)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void on_usr1(int sig) {
	(void)sig;
	handled++;
}

static void handler(int flags) {
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = flags};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		die("sigaction");
}

static void timeout_ms(int r, int ms) {
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	if (setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
		die("SO_RCVTIMEO");
}

/* ready has r's next receive (one of a datagram already there) enter the engine once, which arms
 * the socket again after SO_RCVTIMEO changed; not counted. */
static void ready(int r, int seq) {
	unsigned char d[64], m[128];
	fill64(d, seq, 2);
	ksend(k, d, 64, &to);
	if (recv(r, m, sizeof m, 0) != 64)
		die("ready recv");
}

/* intr_case has the helper signal the receiving thread 20 ms into a receive on r and send
 * datagram seq 60 ms in, and prints what the receive returned as NAME's lines: its result, EINTR,
 * the datagram's sequence number, whether the handler ran, the engine calls. */
static void intr_case(int r, const char *name, int seq) {
	unsigned char m[128];
	handled = 0;
	start((struct job){.kill_ms = 20, .send_ms = 60, .seq = seq});
	long before = calls();
	errno = 0;
	long n = recv(r, m, sizeof m, 0);
	int e = errno;
	long c = calls() - before;
	finish();
	int got = -1;
	if (n == 64)
		memcpy(&got, m, sizeof got);
	printf("%s ret=%ld\n%s eintr=%d\n%s seq=%d\n%s handled=%d\n%s calls=%ld\n", name, n, name, n < 0 && e == EINTR,
	       name, got, name, (int)handled, name, engine_calls ? c : -1);
}

int main(int argc, char **argv) {
	progs_init();
	if (argc != 2)
		return 2;
	int rounds = atoi(argv[1]);
	int r;
	rx_pair(&r, &k);
	to = lo(local_port(r));
	main_thread = pthread_self();
	pthread_t h;
	if (pthread_create(&h, NULL, helper, NULL) != 0)
		die("pthread_create");
	unsigned char m[128];

	/* warm-up: the first receives that wait enter the engine, which spins first while the waits
	 * are short, then (waits of 2 ms) arms the box to wait here; not counted */
	for (int i = 0; i < 30; i++) {
		start((struct job){.send_ms = 2, .seq = i});
		if (recv(r, m, sizeof m, 0) != 64)
			die("warm-up");
		finish();
	}
	long got = 0, bad = 0, c = 0;
	for (int i = 0; i < rounds; i++) {
		start((struct job){.send_ms = 2, .seq = 100 + i});
		long before = calls();
		long n = recv_kind(r, i % 4, m, sizeof m, &(struct sockaddr_in){0}, &(socklen_t){sizeof(struct sockaddr_in)},
				   &(int){0});
		c += calls() - before;
		finish();
		if (n < 0)
			die("wait recv");
		int seq;
		memcpy(&seq, m, sizeof seq);
		got++;
		bad += n != 64 || seq != 100 + i;
	}
	printf("wait got=%ld\nwait bad=%ld\nwait calls=%ld\n", got, bad, engine_calls ? c : -1);

	timeout_ms(r, 50);
	ready(r, 200);
	long before = calls(), t0 = now_ms();
	errno = 0;
	long n = recv(r, m, sizeof m, 0);
	int e = errno;
	long took = now_ms() - t0;
	printf("timeout ret=%ld\ntimeout eagain=%d\ntimeout waited=%d\ntimeout calls=%ld\n", n, n < 0 && e == EAGAIN,
	       took >= 40 && took < 1000, engine_calls ? calls() - before : -1);

	timeout_ms(r, 0);
	ready(r, 201);
	handler(0);
	intr_case(r, "intr", 300);
	int seq = -1;
	if (recv(r, m, sizeof m, 0) == 64)
		memcpy(&seq, m, sizeof seq);
	printf("intr next=%d\n", seq);

	handler(SA_RESTART);
	intr_case(r, "restart", 301);

	timeout_ms(r, 1000);
	ready(r, 202);
	intr_case(r, "timedrestart", 302);
	if (recv(r, m, sizeof m, 0) != 64)
		die("timedrestart next");

	/* A goxio sender: under goxio its ring's first record wakes the receive waiting here. */
	timeout_ms(r, 2000);
	ready(r, 203);
	start((struct job){.ring = 12, .ring_gap_ms = 3});
	int ringgot = 0, disorder = 0, lost = 0;
	for (int i = 0; i < 12; i++) {
		n = recv(r, m, sizeof m, 0);
		if (n < 0 && errno == EAGAIN) {
			lost++; /* 2 s without the datagram sent 3 ms after the one before */
			break;
		}
		if (n != 64)
			die("ring recv");
		memcpy(&seq, m, sizeof seq);
		disorder += seq != i;
		ringgot++;
	}
	finish();
	printf("ring got=%d\nring disorder=%d\nring lost=%d\n", ringgot, disorder, lost);

	pthread_mutex_lock(&mu);
	quit = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(h, NULL);
	close(r);
	return 0;
}

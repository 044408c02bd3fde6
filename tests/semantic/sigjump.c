/* A handler left by siglongjmp: the classic timeout around a blocking call (a timer, then a jump
 * back to the sigsetjmp before the call), again and again, on a UDP socket's receive and poll and
 * on a pipe's read; a handler that jumps inside itself and returns; and afterwards a handler
 * that returns still runs; two handlers due at once, the first of which jumps: the second runs
 * right after the jump; a datagram still comes, and the thread's alternate stack is what it was. Under goxio the first jump left the library's count of running handlers raised for good:
 * every later handler that came while the thread was in the engine was deferred and never ran,
 * so the second timeout never fired and the receive returned EINTR (shim/preload/signal.c). */
#include "common.h"
#include <setjmp.h>

static sigjmp_buf env;
static volatile sig_atomic_t mode, ran;

static void on_alarm(int s)
{
	(void)s;
	ran++;
	if (mode == 1)
		siglongjmp(env, 1);
	if (mode == 2) {
		sigjmp_buf inner; /* a jump that stays inside the handler */
		if (sigsetjmp(inner, 0) == 0)
			siglongjmp(inner, 1);
	}
}

static volatile sig_atomic_t usr2_ran;
static void on_usr1(int s) { (void)s; siglongjmp(env, 1); }
static void on_usr2(int s) { (void)s; usr2_ran = 1; }

static pthread_t main_thread;

/* both signals at once, while the main thread waits in a receive */
static void *send_both(void *arg)
{
	(void)arg;
	msleep(30);
	pthread_kill(main_thread, SIGUSR1);
	pthread_kill(main_thread, SIGUSR2);
	return NULL;
}

static void arm(int us)
{
	struct itimerval it = {{0, 0}, {0, us}};
	setitimer(ITIMER_REAL, &it, NULL);
}

int main(void)
{
	int r = udp_bound(0), s = udp_bound(0), p[2];
	udp_warm(r, s);
	if (pipe(p) != 0)
		die("pipe");
	stack_t before, after;
	sigaltstack(NULL, &before);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) != 0)
		die("sigaction");
	static const char *const what[3] = {"udp recv", "udp poll", "pipe read"};
	for (int i = 0; i < 9; i++) {
		mode = 1;
		if (sigsetjmp(env, 1) == 0) {
			arm(20000);
			char b[16];
			long n;
			if (i % 3 == 0) {
				n = recv(r, b, sizeof b, 0);
			} else if (i % 3 == 1) {
				struct pollfd pf = {r, POLLIN, 0};
				n = poll(&pf, 1, -1);
			} else {
				n = read(p[0], b, sizeof b);
			}
			out("round %d, %s: returned %ld %s (no jump)\n", i, what[i % 3], n, n < 0 ? ename(errno) : "");
		} else {
			out("round %d, %s: left by the handler's jump\n", i, what[i % 3]);
		}
	}
	/* a handler that jumps inside itself, then returns: the receive goes on (SA_RESTART) */
	mode = 2;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	ran = 0;
	arm(20000);
	msleep(60);
	out("handler that jumps inside itself ran: %s\n", ran == 1 ? "yes" : "no");
	/* a returning handler still runs while the thread waits in a receive */
	mode = 0;
	ran = 0;
	arm(20000);
	struct pollfd pf = {r, POLLIN, 0};
	long n = poll(&pf, 1, 200);
	out("poll during a returning handler: %ld %s, handler ran: %s\n", n, n < 0 ? ename(errno) : "",
	    ran == 1 ? "yes" : "no");
	/* two handlers due at once, the first jumps: the second runs right after the jump, before
	 * the program makes another call (the library deferred both while the thread was in the
	 * engine; the jump skipped the flush that would have run the second) */
	main_thread = pthread_self();
	struct sigaction s1, s2;
	memset(&s1, 0, sizeof s1);
	memset(&s2, 0, sizeof s2);
	s1.sa_handler = on_usr1;
	s2.sa_handler = on_usr2;
	sigemptyset(&s1.sa_mask);
	sigemptyset(&s2.sa_mask);
	sigaction(SIGUSR1, &s1, NULL);
	sigaction(SIGUSR2, &s2, NULL);
	pthread_t t;
	pthread_create(&t, NULL, send_both, NULL);
	if (sigsetjmp(env, 1) == 0) {
		char b[16];
		long n = recv(r, b, sizeof b, 0);
		out("two signals: recv returned %ld (no jump)\n", n);
	} else {
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do /* no call the library intercepts */
			clock_gettime(CLOCK_MONOTONIC, &t1);
		while (!usr2_ran && (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 500000000L);
		out("two signals: left by the first handler's jump, the second handler ran at once: %s\n",
		    usr2_ran ? "yes" : "no");
	}
	pthread_join(t, NULL);
	udp_send_to(s, "x", 1, port_of(r));
	char b[8];
	E("recv after the jumps", recv(r, b, sizeof b, 0), 1, 0);
	sigaltstack(NULL, &after);
	CHECK("alternate stack as before", before.ss_sp == after.ss_sp && before.ss_size == after.ss_size &&
						   before.ss_flags == after.ss_flags);
	return finish();
}

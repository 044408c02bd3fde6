/* Datagrams received by a program and by its signal handler at once: a timer signal arrives every
 * 50 us while the main loop receives bursts one datagram per call, and the handler receives from
 * the same socket (what a SIGIO-driven program that also drains in its main loop does). Under
 * goxio the main loop's receives copy datagrams out of the socket's box under its lock
 * (shim/preload/box.c), and the handler's receive goes to the engine, which takes the same lock:
 * a signal in that window must not leave the handler waiting for a lock its own thread holds, and
 * one that comes while the thread runs the engine's code must not make the handler enter it again
 * (both are deferred: shim/preload/signal.c; before, this program crashed or hung at once). And
 * the handler, which the kernel starts on the thread's alternate stack (the library's
 * SA_ONSTACK), must not leave its frames there while it runs the engine's code, where the next
 * signal would write over them (shim/preload/altstack.c; with a timer every 50 us the program
 * crashed in 2 runs of 15, every 20 us in 7). Every datagram must come once, each receiver's in
 * order, and a handler never runs inside itself. */
#include "common.h"
#include <signal.h>
#include <sys/time.h>

#define ROUNDS 1500
#define BURST 40
#define TOTAL (ROUNDS * BURST)

static int g_r;
static volatile sig_atomic_t g_in_handler, g_nested;
static int seen[TOTAL];
static int hand_last = -1, main_last = -1, hand_disorder, main_disorder, dups, bad;
static volatile int hand_got, main_got;

static void take(const unsigned char *m, long n, int *last, int *disorder)
{
	if (n != 8 || m[4] != 0xa5 || m[5] != 0x5a) {
		bad++;
		return;
	}
	int seq = m[0] | m[1] << 8 | m[2] << 16;
	if (seq < 0 || seq >= TOTAL) {
		bad++;
		return;
	}
	if (seen[seq]++)
		dups++;
	if (seq <= *last)
		(*disorder)++;
	*last = seq;
}

static void on_timer(int sig)
{
	(void)sig;
	int saved = errno;
	if (g_in_handler)
		g_nested++;
	g_in_handler = 1;
	unsigned char m[16];
	for (int i = 0; i < 2; i++) {
		long n = recv(g_r, m, sizeof m, MSG_DONTWAIT);
		if (n < 0)
			break;
		take(m, n, &hand_last, &hand_disorder);
		hand_got++;
	}
	g_in_handler = 0;
	errno = saved;
}

int main(void)
{
	int r = udp_bound(0), s = udp_bound(0);
	g_r = r;
	udp_warm(r, s);
	struct sigaction sa = { .sa_handler = on_timer, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	OK("sigaction", sigaction(SIGALRM, &sa, NULL));
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	OK("setitimer", setitimer(ITIMER_REAL, &it, NULL));
	double deadline = now_s() + 15;
	int port = port_of(r), stuck = 0;
	for (int round = 0; round < ROUNDS && !stuck; round++) {
		for (int i = 0; i < BURST; i++) {
			int seq = round * BURST + i;
			unsigned char m[8] = { (unsigned char)seq, (unsigned char)(seq >> 8), (unsigned char)(seq >> 16), 0,
					       0xa5, 0x5a, 0, 0 };
			while (udp_send_to(s, m, sizeof m, port) != (ssize_t)sizeof m)
				if (errno != EINTR && errno != EAGAIN && errno != ENOBUFS)
					die("send %d", seq);
		}
		while (hand_got + main_got < (round + 1) * BURST) {
			unsigned char m[16];
			long n = recv(r, m, sizeof m, MSG_DONTWAIT);
			if (n >= 0) {
				/* the handler may run between the receive and here: count with it blocked */
				sigset_t set, old;
				sigemptyset(&set);
				sigaddset(&set, SIGALRM);
				sigprocmask(SIG_BLOCK, &set, &old);
				take(m, n, &main_last, &main_disorder);
				main_got++;
				sigprocmask(SIG_SETMASK, &old, NULL);
			} else if (errno != EAGAIN && errno != EINTR) {
				die("recv");
			} else if (now_s() > deadline) {
				stuck = 1;
				break;
			}
		}
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	int missing = 0;
	for (int i = 0; i < TOTAL; i++)
		missing += seen[i] == 0;
	CHECK("every burst received within the time", !stuck);
	out("datagrams %d: missing %d, twice %d, malformed %d\n", TOTAL, missing, dups, bad);
	CHECK("the main loop's in order", main_disorder == 0);
	CHECK("the handler's in order", hand_disorder == 0);
	CHECK("the handler received some", hand_got > 0);
	CHECK("the handler never ran inside itself", g_nested == 0);
	return finish();
}

/* What sigaction reports of a program's handlers: the flags the program gave (libc's restorer
 * added, as the kernel reports it), never the SA_ONSTACK and SA_SIGINFO the library adds to the
 * trampoline it installs instead (shim/preload/signal.c), the handler and the mask; through a
 * query and through the old action of a second install, before and after the engine loads. */
#include "common.h"
#include <signal.h>

static void h1(int s) { (void)s; }
static void h2(int s, siginfo_t *i, void *c) { (void)s; (void)i; (void)c; }

static void show_act(const char *label, const struct sigaction *o, int info)
{
	int same = info ? o->sa_sigaction == h2 : o->sa_handler == h1;
	out("%s: flags %#x, handler %s, mask has SIGUSR2 %s\n", label, (unsigned)o->sa_flags, same ? "ours" : "other",
	    sigismember(&o->sa_mask, SIGUSR2) ? "yes" : "no");
}

static void round_of(const char *when)
{
	static const struct {
		int sig, flags, info;
	} cases[] = {
		{SIGUSR1, SA_RESTART, 0},
		{SIGUSR1, 0, 0},
		{SIGALRM, SA_SIGINFO, 1},
		{SIGALRM, SA_SIGINFO | SA_ONSTACK | SA_NODEFER, 1},
		{SIGIO, SA_RESETHAND, 0},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct sigaction sa, o, back;
		memset(&sa, 0, sizeof sa);
		if (cases[k].info)
			sa.sa_sigaction = h2;
		else
			sa.sa_handler = h1;
		sa.sa_flags = cases[k].flags;
		sigemptyset(&sa.sa_mask);
		sigaddset(&sa.sa_mask, SIGUSR2);
		if (sigaction(cases[k].sig, &sa, NULL) != 0 || sigaction(cases[k].sig, NULL, &o) != 0)
			die("sigaction");
		char label[64];
		snprintf(label, sizeof label, "%s case %zu query", when, k);
		show_act(label, &o, cases[k].info);
		if (sigaction(cases[k].sig, &sa, &back) != 0)
			die("sigaction again");
		snprintf(label, sizeof label, "%s case %zu old", when, k);
		show_act(label, &back, cases[k].info);
	}
	void (*prev)(int) = signal(SIGUSR1, h1);
	out("%s signal(): previous handler %s\n", when, prev == h1 ? "ours" : "other");
	struct sigaction o;
	sigaction(SIGUSR1, NULL, &o);
	show_act("signal() query", &o, 0);
}

int main(void)
{
	round_of("before");
	int r = udp_bound(0), s = udp_bound(0);
	udp_warm(r, s); /* the engine is loaded now (under goxio) */
	round_of("after");
	return finish();
}

/* vfork: a real vfork child runs in its parent's memory until it calls execve or _exit, with its own
 * fd table and signal dispositions. The children here close, dup2 and fcntl the parent's sockets,
 * reset and install signal handlers, make and use sockets of their own, send on inherited ones and
 * exec or _exit; the parent then checks that its sockets, fds and handlers are as they were and
 * that it sees what the child wrote into its memory (which a fork would not show). Twice: with
 * sockets the library has not handed to its engine yet (nothing has moved data), then after data
 * moved on them.
 *
 * The child prints nothing: it records its results in the parent's memory (notes[]), and the parent
 * prints them after the child is gone. */
#include "common.h"

#define MAX_NOTES 32

struct note {
	char label[64];
	long r;
	int err;
};

static struct note notes[MAX_NOTES];
static volatile int nnotes;
static volatile int child_wrote;
static volatile sig_atomic_t usr1_hits, usr2_hits_child;

static void note(const char *label, long r)
{
	int e = errno;
	if (nnotes < MAX_NOTES) {
		struct note *n = &notes[nnotes];
		snprintf(n->label, sizeof n->label, "%s", label);
		n->r = r;
		n->err = r < 0 ? e : 0;
		nnotes = nnotes + 1;
	}
	errno = e;
}

/* print_notes prints what the child recorded, checked against want (r >= 0: success wanted). */
static void print_notes(const char *tag)
{
	out("%s: child recorded %d results\n", tag, nnotes);
	for (int i = 0; i < nnotes; i++) {
		if (notes[i].r < 0)
			out("  %s = -1 %s\n", notes[i].label, ename(notes[i].err));
		else
			out("  %s = ok\n", notes[i].label);
	}
	nnotes = 0;
}

static void on_usr1(int sig) { usr1_hits++; }
static void on_usr2(int sig) { usr2_hits_child++; }

/* handler_is reports whether sig's disposition is h. */
static int handler_is(int sig, void (*h)(int))
{
	struct sigaction cur;
	if (sigaction(sig, NULL, &cur) != 0)
		return 0;
	return cur.sa_handler == h;
}

static int is_socket(int fd)
{
	int type = 0;
	socklen_t l = sizeof type;
	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) == 0;
}

/* recv_line receives one datagram from r within 2 s and prints it under label. */
static void recv_show(int r, const char *label)
{
	char buf[64];
	long k = -1;
	if (wait_readable(r, 2000))
		k = recv(r, buf, sizeof buf, MSG_DONTWAIT);
	if (k < 0)
		k = 0;
	show(label, buf, k);
}

/* drain_sorted receives n datagrams from r and prints them sorted, as their order across two
 * sending sockets is not defined. */
static void recv_sorted(int r, int n, const char *label)
{
	char got[8][64];
	int m = 0;
	for (int i = 0; i < n && m < 8; i++) {
		long k = -1;
		if (wait_readable(r, 2000))
			k = recv(r, got[m], sizeof got[m] - 1, MSG_DONTWAIT);
		if (k < 0)
			break;
		got[m++][k] = 0;
	}
	for (int i = 0; i < m; i++)
		for (int j = i + 1; j < m; j++)
			if (strcmp(got[j], got[i]) < 0) {
				char t[64];
				memcpy(t, got[i], 64);
				memcpy(got[i], got[j], 64);
				memcpy(got[j], t, 64);
			}
	for (int i = 0; i < m; i++)
		out("%s = \"%s\"\n", label, got[i]);
	CHECK("all datagrams arrived", m == n);
}

/* the sockets of the parent */
static int r, s, victim, tl, tc, ta;

/* child_work is what each vfork child does before it leaves. */
static void child_work(int rport)
{
	child_wrote = 42;
	/* the parent's handler reset in the child, a handler of the child's own installed */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	note("sigaction SIGUSR1 default", sigaction(SIGUSR1, &dfl, NULL));
	note("signal SIGUSR2 handler", signal(SIGUSR2, on_usr2) == SIG_ERR ? -1 : 0);
	note("raise SIGUSR2", raise(SIGUSR2));
	/* the parent's sockets: send on one, close one, replace one, change fd flags */
	note("send on inherited socket", udp_send_to(s, "inherited", 9, rport));
	note("send on inherited tcp", send(tc, "tcp", 3, 0));
	note("fcntl FD_CLOEXEC on inherited", fcntl(s, F_SETFD, FD_CLOEXEC));
	note("close inherited socket", close(victim));
	int own = socket(AF_INET, SOCK_DGRAM, 0);
	note("own socket", own);
	note("send on own socket", udp_send_to(own, "own", 3, rport));
	int nul = open("/dev/null", O_WRONLY);
	note("dup2 onto inherited listener", dup2(nul, tl));
	note("write to replaced fd", write(tl, "x", 1));
	note("close own socket", close(own));
	note("close /dev/null", close(nul));
}

static void check_parent(const char *tag, int rport)
{
	char lbl[96];
#define L(x) (snprintf(lbl, sizeof lbl, "%s: %s", tag, x), lbl)
	CHECK(L("child wrote into the parent's memory"), child_wrote == 42);
	CHECK(L("child's handler ran in the child"), usr2_hits_child == 1);
	CHECK(L("SIGUSR1 handler still the program's"), handler_is(SIGUSR1, on_usr1));
	CHECK(L("SIGUSR2 still default in the parent"), handler_is(SIGUSR2, SIG_DFL));
	usr1_hits = 0;
	raise(SIGUSR1);
	CHECK(L("SIGUSR1 handler runs"), usr1_hits == 1);
	CHECK(L("closed socket still open in the parent"), is_socket(victim));
	CHECK(L("replaced listener still a socket"), is_socket(tl));
	E(L("inherited socket still without FD_CLOEXEC"), fcntl(s, F_GETFD), 0, 0);
	recv_sorted(r, 2, L("got"));
	E(L("send on socket the child closed"), udp_send_to(victim, "victim", 6, rport), 6, 0);
	recv_show(r, L("got"));
	E(L("send on socket the child used"), udp_send_to(s, "parent", 6, rport), 6, 0);
	recv_show(r, L("got"));
	char buf[8] = {0};
	E(L("tcp bytes the child sent"), recv_all(ta, buf, 3), 3, 0);
	show(L("tcp got"), buf, 3);
	E(L("tcp send from the parent"), send(tc, "par", 3, 0), 3, 0);
	E(L("tcp recv"), recv_all(ta, buf, 3), 3, 0);
	int c = tcp_connect_port(port_of(tl));
	int a = accept(tl, NULL, NULL);
	OK(L("listener still accepts"), a);
	close(c);
	close(a);
#undef L
}

static void phase(const char *tag, const char *self, int use_exec)
{
	int rport = port_of(r);
	usr2_hits_child = 0;
	child_wrote = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		child_work(rport);
		if (use_exec) {
			char *argv[] = {(char *)self, "exec-child", NULL};
			execv(self, argv);
		}
		_exit(7);
	}
	int st = 0;
	E("waitpid", waitpid(pid, &st, 0) == pid ? 0 : -1, 0, 0);
	out("%s: exit = %d\n", tag, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	print_notes(tag);
	check_parent(tag, rport);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "exec-child") == 0) {
		out("exec child: SIGUSR2 default again = %s\n", handler_is(SIGUSR2, SIG_DFL) ? "yes" : "no");
		return 3;
	}
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl < 0)
		die("readlink");
	self[sl] = 0;
	struct sigaction act;
	memset(&act, 0, sizeof act);
	act.sa_handler = on_usr1;
	if (sigaction(SIGUSR1, &act, NULL) != 0)
		die("sigaction");
	r = udp_bound(0);
	s = udp_bound(0);
	victim = udp_bound(0);
	tl = tcp_listener(0);
	tc = tcp_connect_port(port_of(tl));
	ta = accept(tl, NULL, NULL);
	if (ta < 0)
		die("accept");

	out("-- vfork before any data moved, child calls _exit\n");
	phase("early", self, 0);
	out("-- vfork after data moved, child calls _exit\n");
	phase("late", self, 0);
	out("-- vfork after data moved, child calls execv\n");
	phase("exec", self, 1);
	return finish();
}

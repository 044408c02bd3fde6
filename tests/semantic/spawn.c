/* Children that exec: vfork+execv, posix_spawn, system() and popen() run this program again in
 * "child" mode; the child uses an inherited UDP socket, checks that a SOCK_CLOEXEC socket was not
 * inherited, opens its own UDP and TCP sockets and talks to the parent. */
#include "common.h"
#include <spawn.h>

extern char **environ;

static int child_main(char **argv)
{
	const char *tag = argv[2];
	int up = atoi(argv[3]), tp = atoi(argv[4]), inh = atoi(argv[5]), cloexec = atoi(argv[6]);
	char lbl[128], buf[16];
#define L(x) (snprintf(lbl, sizeof lbl, "%s: %s", tag, x), lbl)
	E(L("send on inherited socket"), udp_send_to(inh, "inherited", 9, up), 9, 0);
	E(L("cloexec socket is gone"), fcntl(cloexec, F_GETFD), -1, EBADF);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	E(L("send on own udp"), udp_send_to(u, "own-udp", 7, up), 7, 0);
	close(u);
	int t = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = lo_addr(tp);
	E(L("connect"), connect(t, (struct sockaddr *)&a, sizeof a), 0, 0);
	E(L("send"), send(t, tag, strlen(tag), 0), (long)strlen(tag), 0);
	E(L("recv reply"), recv_all(t, buf, 2), 2, 0);
	close(t);
#undef L
	return g_fail ? 1 : 0;
}

static int r, l, inh, cx;
static char self[4096];

static void build_args(char **argv, char bufs[5][32], const char *tag)
{
	snprintf(bufs[0], 32, "%s", tag);
	snprintf(bufs[1], 32, "%d", port_of(r));
	snprintf(bufs[2], 32, "%d", port_of(l));
	snprintf(bufs[3], 32, "%d", inh);
	snprintf(bufs[4], 32, "%d", cx);
	argv[0] = self;
	argv[1] = "child";
	for (int i = 0; i < 5; i++)
		argv[2 + i] = bufs[i];
	argv[7] = NULL;
}

/* serve answers one child connection and returns what the child sent, without printing, so the
 * child's own output is not interleaved with ours. */
static void serve(char *got, size_t n)
{
	int t = accept(l, NULL, NULL);
	if (t < 0)
		die("accept");
	memset(got, 0, n);
	wait_readable(t, 5000);
	msleep(20);
	long k = recv(t, got, n - 1, 0);
	if (k < 0)
		k = 0;
	got[k] = 0;
	send(t, "ok", 2, 0);
	close(t);
}

static void report(const char *tag, int st, const char *got)
{
	char buf[64];
	out("%s exit = %d\n", tag, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		g_fail++;
	out("%s tcp got = \"%s\"\n", tag, got);
	for (int i = 0; i < 2; i++) {
		wait_readable(r, 1000);
		long k = recv(r, buf, sizeof buf, MSG_DONTWAIT);
		show("  udp got", buf, k);
	}
}

int main(int argc, char **argv)
{
	if (argc == 7 && strcmp(argv[1], "child") == 0)
		return child_main(argv);
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl < 0)
		die("readlink");
	self[sl] = 0;
	r = udp_bound(0);
	l = tcp_listener(0);
	inh = udp_bound(0);
	cx = udp_bound(SOCK_CLOEXEC);
	char *args[8], bufs[5][32], got[64];
	int st;

	out("-- vfork + execv\n");
	build_args(args, bufs, "vfork");
	pid_t pid = vfork();
	if (pid == 0) {
		execv(self, args);
		_exit(127);
	}
	serve(got, sizeof got);
	waitpid(pid, &st, 0);
	report("vfork", st, got);

	out("-- fork + execve\n");
	build_args(args, bufs, "fork-exec");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execve(self, args, environ);
		_exit(127);
	}
	serve(got, sizeof got);
	waitpid(pid, &st, 0);
	report("fork-exec", st, got);

	out("-- posix_spawn\n");
	build_args(args, bufs, "spawn");
	int sr = posix_spawn(&pid, self, NULL, NULL, args, environ);
	if (sr == 0)
		serve(got, sizeof got);
	waitpid(pid, &st, 0);
	E("posix_spawn", sr, 0, 0);
	report("spawn", st, got);

	out("-- system\n");
	build_args(args, bufs, "system");
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "'%s' child %s %s %s %s %s", self, bufs[0], bufs[1], bufs[2], bufs[3], bufs[4]);
	/* system() blocks, so the parent's side of the conversation runs in a forked helper that hands
	 * back what it got through a pipe. */
	int pfd[2];
	if (pipe(pfd) < 0)
		die("pipe");
	pid_t srv = fork();
	if (srv == 0) {
		serve(got, sizeof got);
		if (write(pfd[1], got, strlen(got)) < 0)
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	st = system(cmd);
	long k = read(pfd[0], got, sizeof got - 1);
	got[k < 0 ? 0 : k] = 0;
	close(pfd[0]);
	waitpid(srv, NULL, 0);
	report("system", st, got);

	out("-- popen\n");
	snprintf(cmd, sizeof cmd, "'%s' child popen %s %s %s %s", self, bufs[1], bufs[2], bufs[3], bufs[4]);
	FILE *f = popen(cmd, "r");
	if (!f)
		die("popen");
	serve(got, sizeof got);
	char line[256];
	int lines = 0;
	while (fgets(line, sizeof line, f)) {
		out("  piped: %s", line);
		lines++;
	}
	st = pclose(f);
	report("popen", st, got);
	CHECK("child's output came through the pipe", lines == 6);
	return finish();
}

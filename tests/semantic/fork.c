/* fork: children use the parent's UDP and TCP sockets (receive what was queued before the fork, send
 * on them), create sockets of their own and talk to the parent's listener; a grandchild does the same;
 * a thread of the parent stays blocked in recv across the fork; the parent's sockets keep working. */
#include "common.h"

static int r, s, l, c, a;

static void child_work(const char *who)
{
	char buf[64], lbl[128];
	long n;
#define L(x) (snprintf(lbl, sizeof lbl, "%s: %s", who, x), lbl)
	n = E(L("recv queued before fork"), recv(r, buf, sizeof buf, 0), 8, 0);
	show(L("data"), buf, n);
	E(L("send on inherited udp"), udp_send_to(s, "from-child", 10, port_of(r)), 10, 0);
	E(L("send on inherited tcp"), send(c, "child-tcp", 9, 0), 9, 0);
	int u = udp_bound(0);
	E(L("send on new udp"), udp_send_to(u, "new-udp", 7, port_of(r)), 7, 0);
	close(u);
	int t = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in la = lo_addr(port_of(l));
	E(L("connect new tcp to parent's listener"), connect(t, (struct sockaddr *)&la, sizeof la), 0, 0);
	E(L("send on new tcp"), send(t, "new-tcp", 7, 0), 7, 0);
	close(t);
#undef L
}

static void parent_collect(const char *who, pid_t pid)
{
	char buf[64];
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	out("%s exited %d\n", who, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		g_fail++;
	for (int i = 0; i < 2; i++) {
		wait_readable(r, 1000);
		long n = recv(r, buf, sizeof buf, MSG_DONTWAIT);
		show("parent udp got", buf, n);
	}
	long n = recv_all(a, buf, 9);
	show("parent tcp got", buf, n);
	int t = accept(l, NULL, NULL);
	n = recv_all(t, buf, 7);
	show("parent accepted and got", buf, n);
	E("  then EOF", recv(t, buf, sizeof buf, 0), 0, 0);
	close(t);
}

struct blocked {
	int fd;
	long n;
	char buf[64];
};

static void *blocked_recv(void *arg)
{
	struct blocked *b = arg;
	b->n = recv(b->fd, b->buf, sizeof b->buf, 0);
	return NULL;
}

int main(void)
{
	char buf[64];
	r = udp_bound(0);
	s = udp_bound(0);
	l = tcp_listener(0);
	c = tcp_connect_port(port_of(l));
	a = accept(l, NULL, NULL);

	out("-- child\n");
	udp_send_to(s, "pre-fork", 8, port_of(r));
	wait_readable(r, 1000);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		child_work("child");
		_exit(g_fail ? 1 : 0);
	}
	parent_collect("child", pid);

	out("-- grandchild\n");
	udp_send_to(s, "pre-fork", 8, port_of(r));
	wait_readable(r, 1000);
	pid = fork();
	if (pid == 0) {
		pid_t g = fork();
		if (g == 0) {
			child_work("grandchild");
			_exit(g_fail ? 1 : 0);
		}
		int st;
		waitpid(g, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 2);
	}
	parent_collect("child of grandchild", pid);

	out("-- fork while a thread is blocked in recv\n");
	int x = udp_bound(0);
	struct blocked b = { x, -2, { 0 } };
	pthread_t th;
	pthread_create(&th, NULL, blocked_recv, &b);
	msleep(100);
	pid = fork();
	if (pid == 0) {
		int u = udp_bound(0);
		long k = udp_send_to(u, "x", 1, port_of(r));
		_exit(k == 1 ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	out("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	wait_readable(r, 1000);
	E("parent recv from that child", recv(r, buf, sizeof buf, 0), 1, 0);
	E("wake the blocked thread", udp_send_to(s, "wake", 4, port_of(x)), 4, 0);
	pthread_join(th, NULL);
	E("blocked thread got", b.n, 4, 0);

	out("-- parent sockets after the children\n");
	E("udp send", udp_send_to(s, "after", 5, port_of(r)), 5, 0);
	wait_readable(r, 1000);
	E("udp recv", recv(r, buf, sizeof buf, 0), 5, 0);
	E("tcp send", send(a, "pong", 4, 0), 4, 0);
	E("tcp recv", recv_all(c, buf, 4), 4, 0);
	close(c);
	E("tcp EOF", recv(a, buf, sizeof buf, 0), 0, 0);
	close(a);
	close(l);
	close(r);
	close(s);
	close(x);
	return finish();
}

/* Daemon-style children: a double fork with setsid and a daemon() call; the daemon (a grandchild
 * with stdio on /dev/null) opens UDP and TCP sockets, talks to the original process and exits. */
#include "common.h"

static int r, l;

static void daemon_work(const char *tag)
{
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	udp_send_to(u, tag, strlen(tag), port_of(r));
	close(u);
	int t = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = lo_addr(port_of(l));
	if (connect(t, (struct sockaddr *)&a, sizeof a) < 0)
		_exit(3);
	char line[128];
	snprintf(line, sizeof line, "%s sid-leader=%s", tag, yesno(getsid(0) == getpid()));
	send(t, line, strlen(line), 0);
	char buf[8];
	recv_all(t, buf, 3);
	close(t);
	_exit(0);
}

static void to_devnull(void)
{
	int n = open("/dev/null", O_RDWR);
	dup2(n, 0);
	dup2(n, 1);
	dup2(n, 2);
	if (n > 2)
		close(n);
}

static void collect(const char *tag, pid_t child)
{
	int st;
	waitpid(child, &st, 0);
	out("%s: intermediate child exit = %d\n", tag, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	struct timeval tv = { 5, 0 };
	setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	int t = (int)OK("accept from daemon", accept(l, NULL, NULL));
	char buf[128];
	memset(buf, 0, sizeof buf);
	wait_readable(t, 5000);
	msleep(20);
	long n = recv(t, buf, sizeof buf - 1, 0);
	show("tcp got", buf, n);
	E("send bye", send(t, "bye", 3, 0), 3, 0);
	E("then EOF", recv(t, buf, sizeof buf, 0), 0, 0);
	close(t);
	wait_readable(r, 2000);
	n = recv(r, buf, sizeof buf, MSG_DONTWAIT);
	show("udp got", buf, n);
}

int main(void)
{
	r = udp_bound(0);
	l = tcp_listener(0);

	out("-- double fork with setsid\n");
	pid_t pid = fork();
	if (pid == 0) {
		if (setsid() < 0)
			_exit(2);
		if (fork() == 0) {
			to_devnull();
			daemon_work("double-fork");
		}
		_exit(0);
	}
	collect("double-fork", pid);

	out("-- daemon()\n");
	pid = fork();
	if (pid == 0) {
		if (daemon(1, 0) < 0)
			_exit(2);
		daemon_work("daemon");
	}
	collect("daemon", pid);
	close(r);
	close(l);
	return finish();
}

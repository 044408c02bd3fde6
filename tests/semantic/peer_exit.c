/* Peers that go away: a child (exec'ed, so it is a separate process with its own library) sends UDP
 * datagrams and a TCP stream and exits at once (everything sent must still arrive, then EOF); a child
 * killed with SIGKILL while holding unread data resets its connection; a child killed while idle
 * closes it cleanly; a connected UDP socket whose peer process died gets ECONNREFUSED. */
#include <poll.h>
#include "common.h"

#define NDGRAM 300
#define STREAM (1 << 20)

static char self[4096];

static pid_t spawn_child(const char *mode, int port)
{
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, mode, ps, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int child_main(const char *mode, int port)
{
	if (strcmp(mode, "udp-burst") == 0) {
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		for (int i = 0; i < NDGRAM; i++) {
			unsigned char m[2] = { (unsigned char)i, (unsigned char)(i >> 8) };
			udp_send_to(s, m, 2, port);
		}
		_exit(0); /* no close: the process just ends */
	}
	if (strcmp(mode, "tcp-burst") == 0) {
		int c = tcp_connect_port(port);
		static unsigned char buf[STREAM];
		fill(buf, sizeof buf, 0);
		send_all(c, buf, sizeof buf);
		_exit(0);
	}
	if (strcmp(mode, "tcp-hold") == 0 || strcmp(mode, "tcp-idle") == 0) {
		int c = tcp_connect_port(port);
		if (strcmp(mode, "tcp-idle") == 0) {
			char b;
			if (recv(c, &b, 1, 0) != 1) /* read the one byte sent, then wait to be killed */
				_exit(3);
		}
		for (;;)
			pause();
	}
	if (strcmp(mode, "udp-peer") == 0) {
		int u = udp_bound(0);
		udp_send_to(u, "here", 4, port);
		for (;;)
			pause();
	}
	return 2;
}

static void reap(const char *label, pid_t pid)
{
	int st;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		out("%s: killed by %s\n", label, sigabbrev_np(WTERMSIG(st)));
	else
		out("%s: exit %d\n", label, WEXITSTATUS(st));
}

int main(int argc, char **argv)
{
	if (argc == 3)
		return child_main(argv[1], atoi(argv[2]));
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl < 0)
		die("readlink");
	self[sl] = 0;
	signal(SIGPIPE, SIG_IGN);

	out("-- udp sender exits right after sending\n");
	int r = udp_bound(0);
	int big = 1 << 20;
	setsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	pid_t pid = spawn_child("udp-burst", port_of(r));
	reap("child", pid);
	int got = 0, inorder = 1;
	while (wait_readable(r, 500)) {
		unsigned char m[4];
		if (recv(r, m, sizeof m, 0) != 2)
			break;
		if (m[0] != (unsigned char)got || m[1] != (unsigned char)(got >> 8))
			inorder = 0;
		got++;
	}
	out("received %d of %d in order %s\n", got, NDGRAM, yesno(inorder));

	out("-- tcp sender exits right after writing 1 MiB\n");
	int l = tcp_listener(0);
	pid = spawn_child("tcp-burst", port_of(l));
	int a = (int)OK("accept", accept(l, NULL, NULL));
	static unsigned char buf[STREAM + 10];
	long n = recv_all(a, buf, sizeof buf); /* reads to EOF: the child has exited by then */
	reap("child", pid);
	out("received %ld intact %s\n", n, yesno(n == STREAM && verify(buf, STREAM, 0)));
	E("then EOF", recv(a, buf, 10, 0), 0, 0);
	close(a);

	out("-- peer killed while holding unread data\n");
	pid = spawn_child("tcp-hold", port_of(l));
	a = accept(l, NULL, NULL);
	E("send to the peer", send(a, "unread", 6, 0), 6, 0);
	msleep(50);
	kill(pid, SIGKILL);
	reap("child", pid);
	wait_readable(a, 2000);
	E("recv", recv(a, buf, 10, 0), -1, ECONNRESET);
	E("recv again", recv(a, buf, 10, 0), 0, 0);
	E("send", send(a, "x", 1, 0), -1, EPIPE);
	close(a);

	out("-- idle peer killed\n");
	pid = spawn_child("tcp-idle", port_of(l));
	a = accept(l, NULL, NULL);
	E("send the byte it reads", send(a, "1", 1, 0), 1, 0);
	msleep(50);
	kill(pid, SIGKILL);
	reap("child", pid);
	wait_readable(a, 2000);
	E("recv EOF", recv(a, buf, 10, 0), 0, 0);
	E("send after EOF", send(a, "x", 1, 0), 1, 0);
	/* The peer's RST arrives asynchronously: wait (bounded) until the socket reports it. */
	for (int i = 0; i < 200; i++) {
		struct pollfd p = { .fd = a, .events = 0 };
		if (poll(&p, 1, 10) == 1 && (p.revents & (POLLERR | POLLHUP)))
			break;
	}
	E("send after the RST", send(a, "x", 1, 0), -1, EPIPE);
	close(a);
	close(l);

	out("-- connected udp to a dead process\n");
	pid = spawn_child("udp-peer", port_of(r));
	wait_readable(r, 2000);
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	E("recvfrom the peer", recvfrom(r, buf, 10, 0, (struct sockaddr *)&from, &fl), 4, 0);
	E("connect to it", connect(r, (struct sockaddr *)&from, fl), 0, 0);
	kill(pid, SIGKILL);
	reap("child", pid);
	E("send to the dead peer", send(r, "x", 1, 0), 1, 0);
	wait_readable(r, 2000);
	E("recv", recv(r, buf, 10, 0), -1, ECONNREFUSED);
	close(r);
	return finish();
}

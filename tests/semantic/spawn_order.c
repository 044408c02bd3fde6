/* Datagrams of one sending socket shared with a spawned child keep their order: the parent sends,
 * a child started by posix_spawn, posix_spawnp, system() or popen() sends on the inherited socket,
 * the parent sends again after the child exited; the receiver (inherited too) gets the datagram
 * queued before the spawn, the child's, then the parent's, as the kernel queues them. A socket
 * made with SOCK_CLOEXEC is not inherited and keeps working in the parent. */
#include "common.h"
#include <spawn.h>

extern char **environ;

static char self[4096];

/* child_main sends "child" on the inherited socket argv[2] to the port argv[3]. */
static int child_main(char **argv)
{
	int fd = atoi(argv[2]), port = atoi(argv[3]);
	return udp_send_to(fd, "child", 5, port) == 5 ? 0 : 1;
}

static int spawn_child(int how, int fd, int port)
{
	char sfd[32], sport[32], cmd[8192];
	snprintf(sfd, sizeof sfd, "%d", fd);
	snprintf(sport, sizeof sport, "%d", port);
	snprintf(cmd, sizeof cmd, "'%s' child %s %s", self, sfd, sport);
	char *args[] = { self, "child", sfd, sport, NULL };
	pid_t pid;
	int st = -1, r;
	switch (how) {
	case 0:
		r = posix_spawn(&pid, self, NULL, NULL, args, environ);
		if (r != 0 || waitpid(pid, &st, 0) != pid)
			return -1;
		return st;
	case 1: {
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
		r = posix_spawnp(&pid, self, &fa, NULL, args, environ);
		posix_spawn_file_actions_destroy(&fa);
		if (r != 0 || waitpid(pid, &st, 0) != pid)
			return -1;
		return st;
	}
	case 2:
		return system(cmd);
	default: {
		FILE *f = popen(cmd, "r");
		if (!f)
			return -1;
		return pclose(f);
	}
	}
}

static void scenario(const char *title, int how)
{
	char buf[64];
	out("-- %s\n", title);
	int rcv = udp_bound(0), snd = udp_bound(0), cx = udp_bound(SOCK_CLOEXEC);
	int rp = port_of(rcv), cp = port_of(cx);
	/* Traffic first, so that a fast path is set up between the sockets. */
	for (int i = 0; i < 3; i++) {
		E("send before", udp_send_to(snd, "warm", 4, rp), 4, 0);
		wait_readable(rcv, 2000);
		E("recv before", recv(rcv, buf, sizeof buf, 0), 4, 0);
		E("send to cloexec", udp_send_to(snd, "warm", 4, cp), 4, 0);
		wait_readable(cx, 2000);
		E("cloexec recv", recv(cx, buf, sizeof buf, 0), 4, 0);
	}
	E("send queued", udp_send_to(snd, "queued", 6, rp), 6, 0);
	wait_readable(rcv, 2000);
	int st = spawn_child(how, snd, rp);
	out("child exit = %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		g_fail++;
	E("send after", udp_send_to(snd, "parent", 6, rp), 6, 0);
	for (int i = 0; i < 3; i++) {
		wait_readable(rcv, 2000);
		msleep(20);
		long n = recv(rcv, buf, sizeof buf, MSG_DONTWAIT);
		show("got", buf, n);
	}
	E("recv again", recv(rcv, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	E("send to cloexec", udp_send_to(snd, "after", 5, cp), 5, 0);
	wait_readable(cx, 2000);
	long n = E("cloexec recv", recv(cx, buf, sizeof buf, 0), 5, 0);
	show("data", buf, n);
	close(rcv);
	close(snd);
	close(cx);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "child") == 0)
		return child_main(argv);
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl < 0)
		die("readlink");
	self[sl] = 0;
	scenario("posix_spawn", 0);
	scenario("posix_spawnp with file actions", 1);
	scenario("system", 2);
	scenario("popen", 3);
	return finish();
}

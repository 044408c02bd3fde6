/* A UDP socket a blocking receive slept on, then a fork: the child closes its copy of the socket,
 * the parent closes its own, and the port is free again at once (a new socket binds it), as with
 * the kernel alone: nothing of the library's keeps the socket open in the child. Then the same
 * with a receive asleep while another thread closes the program's fd: the receive still gets the
 * datagram sent to the socket (the kernel keeps the file while a call uses it). */
#include "common.h"

static int g_port;

static void *send_later(void *arg)
{
	(void)arg;
	msleep(300); /* long enough for the receive to stop spinning and sleep */
	int s = udp_bound(0);
	udp_send_to(s, "wake", 4, g_port);
	close(s);
	return NULL;
}

int main(void)
{
	int r = udp_bound(0);
	g_port = port_of(r);
	char buf[16];
	pthread_t th;
	pthread_create(&th, NULL, send_later, NULL);
	E("blocking recv (slept)", recv(r, buf, sizeof buf, 0), 4, 0);
	pthread_join(th, NULL);

	int go[2];
	OK("pipe", pipe(go));
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(r);
		close(go[1]);
		char c;
		while (read(go[0], &c, 1) > 0) {
		}
		_exit(0);
	}
	close(go[0]);
	OK("close in the parent", close(r));
	msleep(50); /* the child has closed its copy */
	int again = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = lo_addr(g_port);
	E("bind the same port again while the child lives", bind(again, (struct sockaddr *)&a, sizeof a), 0, 0);
	close(go[1]);
	int st;
	waitpid(pid, &st, 0);
	CHECK("child exited 0", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(again);
	return finish();
}

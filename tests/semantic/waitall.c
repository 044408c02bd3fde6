/* MSG_WAITALL on TCP: data arriving in pieces from another thread and from another process, EOF
 * before the full length, SO_RCVTIMEO expiring with partial data; UDP ignores it. */
#include "common.h"

struct pieces {
	int fd, n, size, gap_ms;
};

static void send_pieces(struct pieces *p)
{
	unsigned char buf[4096];
	for (int i = 0; i < p->n; i++) {
		fill(buf, (size_t)p->size, (size_t)(i * p->size));
		msleep(p->gap_ms);
		if (send_all(p->fd, buf, (size_t)p->size) < 0)
			die("send piece");
	}
}

static void *sender(void *arg)
{
	send_pieces(arg);
	return NULL;
}

int main(void)
{
	static unsigned char buf[8192];
	int c, s;

	out("-- pieces from a thread\n");
	tcp_pair(&c, &s);
	struct pieces p = { c, 10, 100, 20 };
	pthread_t th;
	pthread_create(&th, NULL, sender, &p);
	E("recv waitall 1000", recv(s, buf, 1000, MSG_WAITALL), 1000, 0);
	CHECK("data in order", verify(buf, 1000, 0));
	pthread_join(th, NULL);

	out("-- pieces from a child process\n");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		struct pieces q = { c, 8, 512, 15 };
		send_pieces(&q);
		_exit(0);
	}
	E("recv waitall 4096", recv(s, buf, 4096, MSG_WAITALL), 4096, 0);
	CHECK("data in order", verify(buf, 4096, 0));
	int st;
	waitpid(pid, &st, 0);
	CHECK("child exited 0", WIFEXITED(st) && WEXITSTATUS(st) == 0);

	out("-- EOF before the full length\n");
	p = (struct pieces){ c, 3, 100, 20 };
	pthread_create(&th, NULL, sender, &p);
	pthread_join(th, NULL);
	E("shutdown wr", shutdown(c, SHUT_WR), 0, 0);
	E("recv waitall 1000 gets what came", recv(s, buf, 1000, MSG_WAITALL), 300, 0);
	E("recv after eof", recv(s, buf, 1000, MSG_WAITALL), 0, 0);
	close(c);
	close(s);

	out("-- SO_RCVTIMEO with partial data\n");
	tcp_pair(&c, &s);
	struct timeval tv = { 0, 300000 };
	E("setsockopt rcvtimeo", setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0, 0);
	E("send 200", send(c, buf, 200, 0), 200, 0);
	double t0 = now_s();
	E("recv waitall 1000", recv(s, buf, 1000, MSG_WAITALL), 200, 0);
	double el = now_s() - t0;
	CHECK("waited about the timeout", el >= 0.29 && el < 1.3);
	t0 = now_s();
	E("recv waitall empty", recv(s, buf, 1000, MSG_WAITALL), -1, EAGAIN);
	el = now_s() - t0;
	CHECK("waited about the timeout", el >= 0.29 && el < 1.3);
	close(c);
	close(s);

	out("-- udp ignores MSG_WAITALL\n");
	int r = udp_bound(0), u = udp_bound(0);
	E("send 10", udp_send_to(u, buf, 10, port_of(r)), 10, 0);
	E("recv waitall 1000", recv(r, buf, 1000, MSG_WAITALL), 10, 0);
	close(r);
	close(u);
	return finish();
}

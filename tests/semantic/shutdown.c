/* shutdown: SHUT_WR gives the peer EOF while the other direction keeps working, SHUT_RD makes recv
 * return 0, SHUT_RDWR, poll bits after each, errors; and shutdown or close from one thread while
 * another is blocked in recv or accept. */
#include "common.h"

struct blocked {
	int fd, is_accept;
	long r;
	int err;
};

static void *blocker(void *arg)
{
	struct blocked *b = arg;
	char buf[16];
	errno = 0;
	b->r = b->is_accept ? accept(b->fd, NULL, NULL) : recv(b->fd, buf, sizeof buf, 0);
	b->err = errno;
	return NULL;
}

static void run_blocked(const char *label, struct blocked *b, void (*act)(int), int fd)
{
	pthread_t th;
	b->r = -2;
	pthread_create(&th, NULL, blocker, b);
	msleep(150);
	act(fd);
	pthread_join(th, NULL);
	errno = b->err;
	V(label, b->r);
}

static void shut_rd(int fd) { shutdown(fd, SHUT_RD); }
static void shut_rdwr(int fd) { shutdown(fd, SHUT_RDWR); }

int main(void)
{
	char buf[64];
	int c, a;

	out("-- SHUT_WR\n");
	tcp_pair(&c, &a);
	E("send", send(c, "data", 4, 0), 4, 0);
	E("shutdown SHUT_WR", shutdown(c, SHUT_WR), 0, 0);
	E("peer recv data", recv_all(a, buf, 4), 4, 0);
	E("peer recv EOF", recv(a, buf, sizeof buf, 0), 0, 0);
	E("peer recv EOF again", recv(a, buf, sizeof buf, 0), 0, 0);
	out("peer poll = %s\n", pollbits(poll1(a, POLLIN | POLLOUT | POLLRDHUP, 0)));
	out("own poll = %s\n", pollbits(poll1(c, POLLIN | POLLOUT | POLLRDHUP, 0)));
	E("peer sends back", send(a, "reply", 5, 0), 5, 0);
	E("recv reply after own SHUT_WR", recv_all(c, buf, 5), 5, 0);
	E("send after SHUT_WR", send(c, "x", 1, MSG_NOSIGNAL), -1, EPIPE);
	E("shutdown SHUT_WR twice", shutdown(c, SHUT_WR), 0, 0);
	E("peer shutdown SHUT_WR", shutdown(a, SHUT_WR), 0, 0);
	E("recv EOF", recv(c, buf, sizeof buf, 0), 0, 0);
	msleep(20);
	out("poll both shut = %s\n", pollbits(poll1(c, POLLIN | POLLOUT | POLLRDHUP, 0)));
	close(c);
	close(a);

	out("-- SHUT_RD\n");
	tcp_pair(&c, &a);
	E("shutdown SHUT_RD", shutdown(a, SHUT_RD), 0, 0);
	E("recv after SHUT_RD", recv(a, buf, sizeof buf, 0), 0, 0);
	out("poll = %s\n", pollbits(poll1(a, POLLIN | POLLOUT | POLLRDHUP, 0)));
	E("send still works", send(a, "out", 3, 0), 3, 0);
	E("peer gets it", recv_all(c, buf, 3), 3, 0);
	close(c);
	close(a);

	out("-- SHUT_RDWR\n");
	tcp_pair(&c, &a);
	E("send", send(c, "pending", 7, 0), 7, 0);
	CHECK("arrived", wait_bytes(a, 7));
	E("shutdown SHUT_RDWR", shutdown(a, SHUT_RDWR), 0, 0);
	E("send after", send(a, "x", 1, MSG_NOSIGNAL), -1, EPIPE);
	E("peer sees EOF", recv(c, buf, sizeof buf, 0), 0, 0);
	close(c);
	close(a);

	out("-- errors\n");
	int t = socket(AF_INET, SOCK_STREAM, 0);
	E("shutdown unconnected tcp", shutdown(t, SHUT_WR), -1, ENOTCONN);
	E("shutdown bad how", shutdown(t, 7), -1, EINVAL);
	close(t);
	int u = udp_bound(0);
	E("shutdown unconnected udp", shutdown(u, SHUT_RD), -1, ENOTCONN);
	E("recv on it returns 0", recv(u, buf, sizeof buf, 0), 0, 0);
	close(u);
	u = udp_bound(0);
	udp_connect_to(u, port_of(u));
	E("shutdown connected udp SHUT_WR", shutdown(u, SHUT_WR), 0, 0);
	E("send after", send(u, "x", 1, MSG_NOSIGNAL), -1, EPIPE);
	close(u);
	int l = tcp_listener(0);
	E("shutdown listener", shutdown(l, SHUT_RDWR), 0, 0);
	E("accept after", accept(l, NULL, NULL), -1, EINVAL);
	close(l);
	E("shutdown -1", shutdown(-1, SHUT_RDWR), -1, EBADF);
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe");
	E("shutdown pipe", shutdown(pp[0], SHUT_RDWR), -1, ENOTSOCK);

	out("-- waking blocked threads\n");
	struct blocked b = { 0, 0, 0, 0 };
	tcp_pair(&c, &a);
	b.fd = a;
	run_blocked("tcp recv woken by SHUT_RD", &b, shut_rd, a);
	close(c);
	close(a);
	tcp_pair(&c, &a);
	b.fd = a;
	run_blocked("tcp recv woken by SHUT_RDWR", &b, shut_rdwr, a);
	close(c);
	close(a);
	u = udp_bound(0);
	b.fd = u;
	run_blocked("udp recv woken by SHUT_RD (unconnected)", &b, shut_rd, u);
	close(u);
	l = tcp_listener(0);
	b.fd = l;
	b.is_accept = 1;
	run_blocked("accept woken by SHUT_RDWR", &b, shut_rdwr, l);
	close(l);

	out("-- close while another thread is blocked in recv\n");
	u = udp_bound(0);
	int up = port_of(u);
	int s = udp_bound(0);
	b.fd = u;
	b.is_accept = 0;
	pthread_t th;
	b.r = -2;
	pthread_create(&th, NULL, blocker, &b);
	msleep(150);
	E("close", close(u), 0, 0);
	msleep(50);
	out("blocked recv still blocked = %s\n", yesno(b.r == -2));
	E("send to the closed socket's port", udp_send_to(s, "to-closed", 9, up), 9, 0);
	pthread_join(th, NULL);
	errno = b.err;
	E("blocked recv got it", b.r, 9, 0);
	close(s);
	return finish();
}

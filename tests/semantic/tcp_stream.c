/* TCP streams: 16 MiB each way at once with integrity checks, 8 concurrent connections, close with
 * unread data (RST: ECONNRESET at the peer), SO_LINGER 0 (RST), address reuse rules. */
#include "common.h"

#define BULK (16L << 20)

struct xfer {
	int fd;
	long sent, got;
	int intact;
};

static void *sender(void *arg)
{
	struct xfer *x = arg;
	static __thread unsigned char buf[65536];
	while (x->sent < BULK) {
		size_t n = sizeof buf;
		if ((long)n > BULK - x->sent)
			n = (size_t)(BULK - x->sent);
		fill(buf, n, (size_t)x->sent);
		ssize_t w = send(x->fd, buf, n, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		x->sent += w;
	}
	return NULL;
}

static void *receiver(void *arg)
{
	struct xfer *x = arg;
	static __thread unsigned char buf[50000];
	x->intact = 1;
	while (x->got < BULK) {
		ssize_t n = recv(x->fd, buf, sizeof buf, 0);
		if (n <= 0)
			break;
		if (!verify(buf, (size_t)n, (size_t)x->got))
			x->intact = 0;
		x->got += n;
	}
	return NULL;
}

int main(void)
{
	int c, a;
	char buf[64];

	out("-- 16 MiB each way at once\n");
	tcp_pair(&c, &a);
	struct xfer s1 = { c, 0, 0, 0 }, r1 = { a, 0, 0, 0 }, s2 = { a, 0, 0, 0 }, r2 = { c, 0, 0, 0 };
	pthread_t t[4];
	pthread_create(&t[0], NULL, sender, &s1);
	pthread_create(&t[1], NULL, receiver, &r1);
	pthread_create(&t[2], NULL, sender, &s2);
	pthread_create(&t[3], NULL, receiver, &r2);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	out("c->a sent %ld got %ld intact %s\n", s1.sent, r1.got, yesno(r1.intact));
	out("a->c sent %ld got %ld intact %s\n", s2.sent, r2.got, yesno(r2.intact));
	close(c);
	E("EOF after close", recv(a, buf, sizeof buf, 0), 0, 0);
	close(a);

	out("-- 8 connections at once, 2 MiB each\n");
	int l = tcp_listener(0);
	struct xfer xs[8], xr[8];
	pthread_t ts[8], tr[8];
	for (int i = 0; i < 8; i++) {
		int cc = tcp_connect_port(port_of(l));
		int aa = accept(l, NULL, NULL);
		xs[i] = (struct xfer){ cc, BULK - (2L << 20), 0, 0 };
		xr[i] = (struct xfer){ aa, 0, BULK - (2L << 20), 0 };
	}
	for (int i = 0; i < 8; i++) {
		pthread_create(&ts[i], NULL, sender, &xs[i]);
		pthread_create(&tr[i], NULL, receiver, &xr[i]);
	}
	int ok = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(ts[i], NULL);
		pthread_join(tr[i], NULL);
		if (xs[i].sent == BULK && xr[i].got == BULK && xr[i].intact)
			ok++;
		close(xs[i].fd);
		close(xr[i].fd);
	}
	out("connections complete and intact = %d\n", ok);
	close(l);

	out("-- close with unread data sends RST\n");
	tcp_pair(&c, &a);
	send(c, "unread", 6, 0);
	wait_bytes(a, 6);
	E("close with unread data", close(a), 0, 0);
	wait_readable(c, 1000);
	E("peer recv", recv(c, buf, sizeof buf, 0), -1, ECONNRESET);
	E("peer recv again", recv(c, buf, sizeof buf, 0), 0, 0);
	E("peer send", send(c, "x", 1, MSG_NOSIGNAL), -1, EPIPE);
	close(c);

	out("-- SO_LINGER 0 sends RST\n");
	tcp_pair(&c, &a);
	struct linger lg = { 1, 0 };
	setsockopt(a, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(a);
	wait_readable(c, 1000);
	out("poll = %s\n", pollbits(poll1(c, POLLIN | POLLOUT | POLLRDHUP, 0)));
	int err = -1;
	socklen_t el = sizeof err;
	getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el);
	out("SO_ERROR = %s\n", ename(err));
	E("recv", recv(c, buf, sizeof buf, 0), 0, 0);
	close(c);

	out("-- address reuse\n");
	l = tcp_listener(0);
	int lp = port_of(l);
	int l2 = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in la = lo_addr(lp);
	E("bind a listening port", bind(l2, (struct sockaddr *)&la, sizeof la), -1, EADDRINUSE);
	int one = 1;
	setsockopt(l2, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	E("with SO_REUSEADDR, still in use by a listener", bind(l2, (struct sockaddr *)&la, sizeof la), -1, EADDRINUSE);
	close(l2);
	c = tcp_connect_port(lp);
	a = accept(l, NULL, NULL);
	close(a);
	close(l);
	recv(c, buf, sizeof buf, 0);
	close(c);
	msleep(20);
	int l3 = socket(AF_INET, SOCK_STREAM, 0);
	E("bind over TIME_WAIT without SO_REUSEADDR", bind(l3, (struct sockaddr *)&la, sizeof la), -1, EADDRINUSE);
	close(l3);
	l3 = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l3, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	E("bind over TIME_WAIT with SO_REUSEADDR", bind(l3, (struct sockaddr *)&la, sizeof la), 0, 0);
	E("listen", listen(l3, 4), 0, 0);
	close(l3);

	out("-- SO_REUSEPORT listeners\n");
	int p1 = socket(AF_INET, SOCK_STREAM, 0), p2 = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(p1, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
	setsockopt(p2, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
	struct sockaddr_in z = lo_addr(0);
	bind(p1, (struct sockaddr *)&z, sizeof z);
	la = lo_addr(port_of(p1));
	E("second bind with SO_REUSEPORT", bind(p2, (struct sockaddr *)&la, sizeof la), 0, 0);
	E("listen 1", listen(p1, 16), 0, 0);
	E("listen 2", listen(p2, 16), 0, 0);
	int cs[16], got = 0;
	for (int i = 0; i < 16; i++)
		cs[i] = tcp_connect_port(port_of(p1));
	fcntl(p1, F_SETFL, O_NONBLOCK);
	fcntl(p2, F_SETFL, O_NONBLOCK);
	int x;
	while ((x = accept(p1, NULL, NULL)) >= 0) {
		got++;
		close(x);
	}
	while ((x = accept(p2, NULL, NULL)) >= 0) {
		got++;
		close(x);
	}
	out("accepted over both = %d\n", got);
	for (int i = 0; i < 16; i++)
		close(cs[i]);
	close(p1);
	close(p2);
	return finish();
}

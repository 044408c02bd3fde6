/* Non-blocking sockets: O_NONBLOCK via fcntl, SOCK_NONBLOCK, ioctl FIONBIO and MSG_DONTWAIT all give
 * EAGAIN on every receive call; accept on an empty non-blocking listener; a full TCP send buffer;
 * turning blocking mode back on. */
#include "common.h"
#include <sys/uio.h>

static void all_receives(const char *how, int fd)
{
	char buf[16], lbl[128];
	struct iovec iov = { buf, sizeof buf };
	struct msghdr m;
	memset(&m, 0, sizeof m);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	snprintf(lbl, sizeof lbl, "%s recv", how);
	E(lbl, recv(fd, buf, sizeof buf, 0), -1, EAGAIN);
	snprintf(lbl, sizeof lbl, "%s recvfrom", how);
	E(lbl, recvfrom(fd, buf, sizeof buf, 0, NULL, NULL), -1, EAGAIN);
	snprintf(lbl, sizeof lbl, "%s recvmsg", how);
	E(lbl, recvmsg(fd, &m, 0), -1, EAGAIN);
	snprintf(lbl, sizeof lbl, "%s read", how);
	E(lbl, read(fd, buf, sizeof buf), -1, EAGAIN);
	snprintf(lbl, sizeof lbl, "%s readv", how);
	E(lbl, readv(fd, &iov, 1), -1, EAGAIN);
}

static void *late_sender(void *arg)
{
	int port = *(int *)arg;
	int s = udp_bound(0);
	msleep(150);
	udp_send_to(s, "late", 4, port);
	close(s);
	return NULL;
}

static int nonblocking(int fd)
{
	return (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
}

int main(void)
{
	char buf[16];
	out("-- udp\n");
	int a = udp_bound(0);
	out("fresh socket nonblocking = %s\n", yesno(nonblocking(a)));
	E("recv MSG_DONTWAIT", recv(a, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	E("recvmmsg MSG_DONTWAIT", recvmmsg(a, &(struct mmsghdr){ 0 }, 1, MSG_DONTWAIT, NULL), -1, EAGAIN);
	E("fcntl F_SETFL O_NONBLOCK", fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK), 0, 0);
	out("nonblocking = %s\n", yesno(nonblocking(a)));
	all_receives("fcntl", a);
	E("fcntl F_SETFL 0", fcntl(a, F_SETFL, fcntl(a, F_GETFL) & ~O_NONBLOCK), 0, 0);
	close(a);

	int b = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in lo = lo_addr(0);
	bind(b, (struct sockaddr *)&lo, sizeof lo);
	out("SOCK_NONBLOCK socket nonblocking = %s\n", yesno(nonblocking(b)));
	all_receives("SOCK_NONBLOCK", b);
	close(b);

	int c = udp_bound(0);
	int on = 1;
	E("ioctl FIONBIO 1", ioctl(c, FIONBIO, &on), 0, 0);
	out("nonblocking = %s\n", yesno(nonblocking(c)));
	all_receives("FIONBIO", c);
	on = 0;
	E("ioctl FIONBIO 0", ioctl(c, FIONBIO, &on), 0, 0);
	out("nonblocking = %s\n", yesno(nonblocking(c)));
	int port = port_of(c);
	pthread_t th;
	pthread_create(&th, NULL, late_sender, &port);
	double t0 = now_s();
	E("blocking recv again waits for data", recv(c, buf, sizeof buf, 0), 4, 0);
	CHECK("waited for the sender", now_s() - t0 >= 0.1);
	pthread_join(th, NULL);
	close(c);

	out("-- tcp\n");
	int l = tcp_listener(SOCK_NONBLOCK);
	E("accept empty nonblocking listener", accept(l, NULL, NULL), -1, EAGAIN);
	E("accept4 empty nonblocking listener", accept4(l, NULL, NULL, SOCK_CLOEXEC), -1, EAGAIN);
	int cl = tcp_connect_port(port_of(l));
	wait_readable(l, 2000);
	int sv = (int)OK("accept", accept(l, NULL, NULL));
	out("accepted socket inherits O_NONBLOCK = %s\n", yesno(nonblocking(sv)));
	E("recv dontwait", recv(sv, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	fcntl(sv, F_SETFL, O_NONBLOCK);
	all_receives("tcp fcntl", sv);

	int small = 4096;
	setsockopt(cl, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	setsockopt(sv, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
	fcntl(cl, F_SETFL, O_NONBLOCK);
	static char chunk[4096];
	long total = 0, r = 0;
	int i;
	for (i = 0; i < 20000; i++) {
		r = send(cl, chunk, sizeof chunk, 0);
		if (r < 0)
			break;
		total += r;
	}
	E("send until full ends with", r < 0 ? -1 : 0, -1, EAGAIN);
	CHECK("some bytes were accepted first", total > 0);
	E("send MSG_DONTWAIT when full", send(cl, chunk, 1, MSG_DONTWAIT), -1, EAGAIN);
	out("poll full sender = %s\n", pollbits(poll1(cl, POLLOUT, 0)));
	long drained = 0;
	while (drained < total) {
		if (!wait_readable(sv, 2000))
			break;
		ssize_t n = recv(sv, chunk, sizeof chunk, 0);
		if (n <= 0)
			break;
		drained += n;
	}
	CHECK("receiver drained everything", drained == total);
	out("poll drained sender = %s\n", pollbits(poll1(cl, POLLOUT, 2000)));
	E("send after drain", send(cl, "x", 1, 0), 1, 0);
	close(cl);
	close(sv);
	close(l);
	return finish();
}

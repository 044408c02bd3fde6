/* SO_RCVTIMEO and SO_SNDTIMEO: blocking calls give EAGAIN after about the timeout (printed only as
 * "elapsed >= timeout and < timeout + 1 s"), a blocked send returns its partial count, option round
 * trips, data arriving before the timeout is returned at once. */
#include "common.h"

#define TMO 0.3

static void timed(const char *label, int fd, long r, int e0, double t0)
{
	(void)fd;
	double el = now_s() - t0;
	errno = e0;
	E(label, r, -1, EAGAIN);
	out("  elapsed >= timeout: %s, < timeout+1s: %s\n", yesno(el >= TMO - 0.01), yesno(el < TMO + 1.0));
	if (!(el >= TMO - 0.01 && el < TMO + 1.0))
		g_fail++;
}

static void *late(void *arg)
{
	int fd = *(int *)arg;
	msleep(100);
	send(fd, "ok", 2, 0);
	return NULL;
}

int main(void)
{
	char buf[64];
	struct timeval tv = { 0, 300000 }, got;
	socklen_t gl = sizeof got;
	double t0;
	long r;

	out("-- udp SO_RCVTIMEO\n");
	int u = udp_bound(0);
	E("setsockopt SO_RCVTIMEO", setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0, 0);
	E("getsockopt SO_RCVTIMEO", getsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &got, &gl), 0, 0);
	out("timeout = %ld.%06ld len %u\n", (long)got.tv_sec, (long)got.tv_usec, gl);
	t0 = now_s();
	r = recv(u, buf, sizeof buf, 0);
	timed("recv", u, r, errno, t0);
	t0 = now_s();
	r = recvfrom(u, buf, sizeof buf, 0, NULL, NULL);
	timed("recvfrom", u, r, errno, t0);
	t0 = now_s();
	r = read(u, buf, sizeof buf);
	timed("read", u, r, errno, t0);
	int u2 = udp_bound(0);
	E("connect", udp_connect_to(u2, port_of(u)), 0, 0);
	pthread_t th;
	pthread_create(&th, NULL, late, &u2);
	t0 = now_s();
	E("recv with data before timeout", recv(u, buf, sizeof buf, 0), 2, 0);
	CHECK("returned before the timeout", now_s() - t0 < TMO);
	pthread_join(th, NULL);

	out("-- tcp SO_RCVTIMEO\n");
	int c, s;
	tcp_pair(&c, &s);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	t0 = now_s();
	r = recv(s, buf, sizeof buf, 0);
	timed("recv", s, r, errno, t0);

	out("-- accept with SO_RCVTIMEO\n");
	int l = tcp_listener(0);
	setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	t0 = now_s();
	r = accept(l, NULL, NULL);
	timed("accept", l, r, errno, t0);

	out("-- zero timeout means block for ever\n");
	struct timeval zero = { 0, 0 };
	E("setsockopt SO_RCVTIMEO 0", setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof zero), 0, 0);
	gl = sizeof got;
	getsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &got, &gl);
	out("timeout = %ld.%06ld\n", (long)got.tv_sec, (long)got.tv_usec);
	struct timeval bad = { 0, 2000000 };
	E("setsockopt SO_RCVTIMEO usec 2000000", setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &bad, sizeof bad), -1, EDOM);
	E("setsockopt SO_RCVTIMEO short optlen", setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, 4), -1, EINVAL);

	out("-- tcp SO_SNDTIMEO\n");
	int small = 4096;
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
	E("setsockopt SO_SNDTIMEO", setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0, 0);
	gl = sizeof got;
	E("getsockopt SO_SNDTIMEO", getsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &got, &gl), 0, 0);
	out("timeout = %ld.%06ld\n", (long)got.tv_sec, (long)got.tv_usec);
	static char big[8 << 20];
	t0 = now_s();
	r = send(c, big, sizeof big, MSG_NOSIGNAL);
	double el = now_s() - t0;
	CHECK("blocked send returns a partial count", r > 0 && r < (long)sizeof big);
	CHECK("  after about the timeout", el >= TMO - 0.01 && el < TMO + 1.0);
	t0 = now_s();
	r = send(c, big, sizeof big, MSG_NOSIGNAL);
	timed("send on a full buffer", c, r, errno, t0);
	close(c);
	close(s);
	close(l);
	close(u);
	close(u2);
	return finish();
}

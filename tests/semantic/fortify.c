/* glibc's fortified entry points: with -D_FORTIFY_SOURCE=2 and a length the compiler cannot see,
 * recv/recvfrom/read/poll/ppoll/FD_SET become __recv_chk, __recvfrom_chk, __read_chk, __poll_chk,
 * __ppoll_chk, __fdelt_chk, and fcntl becomes fcntl64 with -D_FILE_OFFSET_BITS=64. They must behave
 * like the plain calls, and a length larger than the buffer must still abort the program. (The Go
 * test checks that the fortified build really imports these symbols.) */
#include "common.h"
#include <sys/select.h>

static volatile size_t vlen = 16;
static volatile nfds_t vn = 2;
static volatile int vfd;

static void overflow_child(const char *label, int which, int fd)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		/* stderr gets glibc's "buffer overflow detected" message; keep it out of the transcript. */
		int n = open("/dev/null", O_WRONLY);
		dup2(n, 2);
		char small[8];
		struct pollfd p[1] = { { fd, POLLIN, 0 } };
		vlen = 64;
		vn = 4;
		switch (which) {
		case 0:
			recv(fd, small, vlen, MSG_DONTWAIT);
			break;
		case 1:
			recvfrom(fd, small, vlen, MSG_DONTWAIT, NULL, NULL);
			break;
		case 2:
			if (read(fd, small, vlen) < 0)
				_exit(1);
			break;
		case 3:
			poll(p, vn, 0);
			break;
		}
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	out("%s: killed by SIGABRT = %s\n", label, yesno(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT));
}

int main(void)
{
	char buf[64];
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r);
	long n;

	for (int i = 0; i < 3; i++)
		udp_send_to(s, "fortified-data", 14, rp);
	wait_readable(r, 1000);
	msleep(20);
	n = E("recv (__recv_chk)", recv(r, buf, vlen, 0), 14, 0);
	show("data", buf, n);
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	n = E("recvfrom (__recvfrom_chk)", recvfrom(r, buf, vlen, 0, (struct sockaddr *)&from, &fl), 14, 0);
	CHECK("source is sender", ntohs(from.sin_port) == port_of(s));
	vlen = 4;
	n = E("read 4 of 14 (__read_chk)", read(r, buf, vlen), 4, 0);
	show("data", buf, n);
	vlen = 16;
	E("recv dontwait empty (__recv_chk)", recv(r, buf, vlen, MSG_DONTWAIT), -1, EAGAIN);
	E("recvfrom dontwait empty (__recvfrom_chk)", recvfrom(r, buf, vlen, MSG_DONTWAIT, NULL, NULL), -1, EAGAIN);

	int flags = fcntl(r, F_GETFL);
	E("fcntl64 F_SETFL O_NONBLOCK", fcntl(r, F_SETFL, flags | O_NONBLOCK), 0, 0);
	out("fcntl64 F_GETFL nonblocking = %s\n", yesno(fcntl(r, F_GETFL) & O_NONBLOCK));
	E("read nonblocking (__read_chk)", read(r, buf, vlen), -1, EAGAIN);
	fcntl(r, F_SETFL, flags);
	out("fcntl64 F_GETFD = %d\n", fcntl(r, F_GETFD));

	struct pollfd p[2] = { { r, POLLIN, 0 }, { s, POLLOUT, 0 } };
	n = E("poll (__poll_chk)", poll(p, vn, 0), 1, 0);
	out("revents %s %s\n", pollbits(p[0].revents), pollbits(p[1].revents));
	udp_send_to(s, "x", 1, rp);
	struct timespec ts = { 1, 0 };
	n = E("ppoll (__ppoll_chk)", ppoll(p, vn, &ts, NULL), 2, 0);
	out("revents %s %s\n", pollbits(p[0].revents), pollbits(p[1].revents));
	recv(r, buf, vlen, 0);

	fd_set rs;
	FD_ZERO(&rs);
	vfd = r;
	FD_SET(vfd, &rs);
	struct timeval tv = { 0, 0 };
	E("select (__fdelt_chk) nothing", select(r + 1, &rs, NULL, NULL, &tv), 0, 0);
	udp_send_to(s, "y", 1, rp);
	wait_readable(r, 1000);
	FD_SET(vfd, &rs);
	E("select (__fdelt_chk) ready", select(r + 1, &rs, NULL, NULL, &tv), 1, 0);
	out("FD_ISSET = %s\n", yesno(FD_ISSET(vfd, &rs)));

#if defined(_FORTIFY_SOURCE) && _FORTIFY_SOURCE > 0 && defined(__OPTIMIZE__)
	out("-- a length larger than the buffer aborts\n");
	udp_send_to(s, "z", 1, rp);
	wait_readable(r, 1000);
	overflow_child("__recv_chk", 0, r);
	overflow_child("__recvfrom_chk", 1, r);
	overflow_child("__read_chk", 2, r);
	overflow_child("__poll_chk", 3, r);
#else
	/* Without fortification the same calls would really overflow the buffer. */
	(void)overflow_child;
	out("-- not a fortified build: overflow checks skipped\n");
#endif
	close(r);
	close(s);
	return finish();
}

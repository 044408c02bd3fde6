/* Bad descriptors: every socket call on -1 and on a closed fd fails with EBADF, on a pipe or a regular
 * file with ENOTSOCK (read/write on a pipe still work), close twice, fds past the limit. */
#include "common.h"
#include <sys/uio.h>

static void all_calls(const char *what, int fd, int werr)
{
	char buf[16], l[128];
	struct sockaddr_in a = lo_addr(9);
	socklen_t al = sizeof a;
	int v = 1;
	socklen_t vl = sizeof v;
	struct iovec iov = { buf, sizeof buf };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = m };
#define T(name, call) do { snprintf(l, sizeof l, "%s %s", name, what); E(l, (call), -1, werr); } while (0)
	T("recv", recv(fd, buf, sizeof buf, MSG_DONTWAIT));
	T("recvfrom", recvfrom(fd, buf, sizeof buf, MSG_DONTWAIT, NULL, NULL));
	T("recvmsg", recvmsg(fd, &m, MSG_DONTWAIT));
	T("recvmmsg", recvmmsg(fd, &mm, 1, MSG_DONTWAIT, NULL));
	T("send", send(fd, "x", 1, MSG_NOSIGNAL));
	T("sendto", sendto(fd, "x", 1, MSG_NOSIGNAL, (struct sockaddr *)&a, sizeof a));
	T("sendmsg", sendmsg(fd, &m, MSG_NOSIGNAL));
	T("sendmmsg", sendmmsg(fd, &mm, 1, MSG_NOSIGNAL));
	T("bind", bind(fd, (struct sockaddr *)&a, sizeof a));
	T("connect", connect(fd, (struct sockaddr *)&a, sizeof a));
	T("listen", listen(fd, 1));
	T("accept", accept(fd, NULL, NULL));
	T("accept4", accept4(fd, NULL, NULL, SOCK_NONBLOCK));
	T("shutdown", shutdown(fd, SHUT_RDWR));
	T("getsockname", getsockname(fd, (struct sockaddr *)&a, &al));
	T("getpeername", getpeername(fd, (struct sockaddr *)&a, &al));
	T("setsockopt", setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v));
	T("getsockopt", getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, &vl));
#undef T
}

int main(void)
{
	char buf[16];
	out("-- fd -1\n");
	all_calls("-1", -1, EBADF);
	E("read -1", read(-1, buf, sizeof buf), -1, EBADF);
	E("write -1", write(-1, "x", 1), -1, EBADF);
	E("close -1", close(-1), -1, EBADF);
	E("fcntl -1", fcntl(-1, F_GETFL), -1, EBADF);
	int v = 0;
	E("ioctl -1", ioctl(-1, FIONREAD, &v), -1, EBADF);

	out("-- closed socket fd\n");
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	E("close", close(u), 0, 0);
	all_calls("closed", u, EBADF);
	E("close again", close(u), -1, EBADF);
	E("read closed", read(u, buf, sizeof buf), -1, EBADF);
	E("fcntl closed", fcntl(u, F_GETFL), -1, EBADF);

	out("-- fd past the limit\n");
	all_calls("1000000", 1000000, EBADF);

	out("-- pipe\n");
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe");
	all_calls("pipe", pp[0], ENOTSOCK);
	E("write pipe", write(pp[1], "ok", 2), 2, 0);
	E("read pipe", read(pp[0], buf, sizeof buf), 2, 0);
	E("recv on pipe write end", recv(pp[1], buf, sizeof buf, 0), -1, ENOTSOCK);

	out("-- regular file\n");
	int f = open("/proc/self/stat", O_RDONLY);
	all_calls("file", f, ENOTSOCK);
	close(f);

	out("-- a socket number reused by a pipe\n");
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	close(s);
	int p2[2];
	if (pipe(p2) < 0)
		die("pipe");
	int reused = p2[0] == s || p2[1] == s;
	out("pipe got the socket's number = %s\n", yesno(reused));
	E("recv on it", recv(s, buf, sizeof buf, MSG_DONTWAIT), -1, ENOTSOCK);
	E("write then read through it", write(p2[1], "pp", 2), 2, 0);
	E("read", read(p2[0], buf, sizeof buf), 2, 0);

	out("-- a socket number reused by another socket type\n");
	int t = socket(AF_INET, SOCK_STREAM, 0);
	close(t);
	int u2 = udp_bound(0);
	out("udp got the tcp's number = %s\n", yesno(u2 == t));
	int st = -1;
	socklen_t sl = sizeof st;
	getsockopt(u2, SOL_SOCKET, SO_TYPE, &st, &sl);
	out("SO_TYPE = %d\n", st);
	E("listen on it", listen(u2, 1), -1, EOPNOTSUPP);
	return finish();
}

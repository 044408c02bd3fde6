/* getsockname and getpeername: unbound, bound, connected, accepted sockets; short and long address
 * buffers (the real length is returned, the address truncated); errors. */
#include "common.h"

static void show_addr(const char *label, int fd, int peer, int want_port)
{
	struct sockaddr_in a;
	memset(&a, 0xee, sizeof a);
	socklen_t l = sizeof a;
	int r = peer ? getpeername(fd, (struct sockaddr *)&a, &l) : getsockname(fd, (struct sockaddr *)&a, &l);
	if (r < 0) {
		out("%s = -1 %s\n", label, ename(errno));
		return;
	}
	char ip[32];
	inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
	int port = ntohs(a.sin_port);
	out("%s = 0 family %d len %u addr %s port %s\n", label, a.sin_family, l, ip,
	    port == 0 ? "0" : want_port < 0 ? "nonzero" : port == want_port ? "as expected" : "UNEXPECTED");
}

int main(void)
{
	out("-- udp\n");
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	show_addr("unbound getsockname", u, 0, 0);
	show_addr("unbound getpeername", u, 1, 0);
	int v = udp_bound(0);
	E("sendto from unbound (autobind)", udp_send_to(u, "x", 1, port_of(v)), 1, 0);
	show_addr("after autobind getsockname", u, 0, -1);
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	wait_readable(v, 1000);
	char buf[8];
	recvfrom(v, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
	CHECK("receiver saw the autobound port", ntohs(from.sin_port) == port_of(u));
	int w = socket(AF_INET, SOCK_DGRAM, 0);
	E("connect unbound udp", udp_connect_to(w, port_of(v)), 0, 0);
	show_addr("connected getsockname", w, 0, -1);
	show_addr("connected getpeername", w, 1, port_of(v));
	struct sockaddr_in any;
	memset(&any, 0, sizeof any);
	any.sin_family = AF_INET;
	int x = socket(AF_INET, SOCK_DGRAM, 0);
	E("bind INADDR_ANY:0", bind(x, (struct sockaddr *)&any, sizeof any), 0, 0);
	show_addr("any getsockname", x, 0, -1);
	E("bind again", bind(x, (struct sockaddr *)&any, sizeof any), -1, EINVAL);
	int y = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in same = lo_addr(port_of(v));
	E("bind in-use port", bind(y, (struct sockaddr *)&same, sizeof same), -1, EADDRINUSE);
	struct sockaddr_in other = lo_addr(0);
	other.sin_addr.s_addr = inet_addr("192.0.2.1");
	E("bind non-local address", bind(y, (struct sockaddr *)&other, sizeof other), -1, EADDRNOTAVAIL);
	E("bind short addrlen", bind(y, (struct sockaddr *)&other, 8), -1, EINVAL);
	other.sin_family = AF_INET6;
	E("bind wrong family", bind(y, (struct sockaddr *)&other, sizeof other), -1, EAFNOSUPPORT);

	out("-- tcp\n");
	int l = tcp_listener(0);
	show_addr("listener getsockname", l, 0, -1);
	show_addr("listener getpeername", l, 1, 0);
	int c = tcp_connect_port(port_of(l));
	struct sockaddr_in pa;
	socklen_t pl = sizeof pa;
	int a = accept(l, (struct sockaddr *)&pa, &pl);
	out("accept addr len %u family %d port matches client = %s\n", pl, pa.sin_family,
	    yesno(ntohs(pa.sin_port) == port_of(c)));
	show_addr("client getsockname", c, 0, -1);
	show_addr("client getpeername", c, 1, port_of(l));
	show_addr("accepted getsockname", a, 0, port_of(l));
	show_addr("accepted getpeername", a, 1, port_of(c));
	int cport = port_of(c);
	close(c);
	recv(a, buf, sizeof buf, 0);
	show_addr("accepted getpeername after peer close", a, 1, cport);
	shutdown(a, SHUT_RDWR);
	show_addr("getpeername after own shutdown", a, 1, -1);

	out("-- address buffer sizes\n");
	unsigned char big[64];
	memset(big, 0xab, sizeof big);
	socklen_t bl = sizeof big;
	E("getsockname big buffer", getsockname(v, (struct sockaddr *)big, &bl), 0, 0);
	out("len = %u, byte 16 untouched = %s\n", bl, yesno(big[16] == 0xab));
	unsigned char small[8];
	memset(small, 0xab, sizeof small);
	socklen_t sl = 4;
	E("getsockname 4-byte buffer", getsockname(v, (struct sockaddr *)small, &sl), 0, 0);
	out("len = %u (full size), byte 4 untouched = %s\n", sl, yesno(small[4] == 0xab));
	sl = 0;
	E("getsockname 0-byte buffer", getsockname(v, (struct sockaddr *)small, &sl), 0, 0);
	out("len = %u\n", sl);
	sl = (socklen_t)-1;
	E("getsockname negative len", getsockname(v, (struct sockaddr *)small, &sl), -1, EINVAL);
	E("getsockname bad fd", getsockname(-1, (struct sockaddr *)small, &sl), -1, EBADF);
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe");
	sl = sizeof small;
	E("getsockname on a pipe", getsockname(pp[0], (struct sockaddr *)small, &sl), -1, ENOTSOCK);
	E("getpeername on a pipe", getpeername(pp[0], (struct sockaddr *)small, &sl), -1, ENOTSOCK);
	return finish();
}

/* setsockopt/getsockopt round trips on UDP and TCP sockets (SO_RCVBUF, SO_SNDBUF, SO_REUSEADDR,
 * SO_REUSEPORT, SO_KEEPALIVE, SO_BROADCAST, SO_LINGER, SO_PRIORITY, TCP_NODELAY, TCP_KEEPIDLE,
 * TCP_MAXSEG, IP_TOS, IP_TTL, IP_MULTICAST_*), read-only options and errors. */
#include "common.h"

static void rt_int(int fd, int level, int name, const char *label, int val)
{
	char l[128];
	snprintf(l, sizeof l, "set %s %d", label, val);
	V(l, setsockopt(fd, level, name, &val, sizeof val));
	int got = -12345;
	socklen_t gl = sizeof got;
	snprintf(l, sizeof l, "get %s", label);
	if (getsockopt(fd, level, name, &got, &gl) < 0)
		out("%s = -1 %s\n", l, ename(errno));
	else
		out("%s = %d (len %u)\n", l, got, gl);
}

static void get_int(int fd, int level, int name, const char *label)
{
	int got = -12345;
	socklen_t gl = sizeof got;
	if (getsockopt(fd, level, name, &got, &gl) < 0)
		out("get %s = -1 %s\n", label, ename(errno));
	else
		out("get %s = %d (len %u)\n", label, got, gl);
}

static void common(int fd)
{
	rt_int(fd, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF", 65536);
	rt_int(fd, SOL_SOCKET, SO_RCVBUF, "SO_RCVBUF", 1);
	rt_int(fd, SOL_SOCKET, SO_SNDBUF, "SO_SNDBUF", 100000);
	rt_int(fd, SOL_SOCKET, SO_REUSEADDR, "SO_REUSEADDR", 1);
	rt_int(fd, SOL_SOCKET, SO_REUSEADDR, "SO_REUSEADDR", 0);
	rt_int(fd, SOL_SOCKET, SO_REUSEPORT, "SO_REUSEPORT", 1);
	rt_int(fd, SOL_SOCKET, SO_KEEPALIVE, "SO_KEEPALIVE", 7);
	rt_int(fd, SOL_SOCKET, SO_BROADCAST, "SO_BROADCAST", 1);
	rt_int(fd, SOL_SOCKET, SO_PRIORITY, "SO_PRIORITY", 3);
	rt_int(fd, SOL_SOCKET, SO_RCVLOWAT, "SO_RCVLOWAT", 1);
	rt_int(fd, IPPROTO_IP, IP_TOS, "IP_TOS", 0x10);
	rt_int(fd, IPPROTO_IP, IP_TOS, "IP_TOS", 0xb8);
	rt_int(fd, IPPROTO_IP, IP_TTL, "IP_TTL", 33);
	rt_int(fd, IPPROTO_IP, IP_TTL, "IP_TTL", 0);
	get_int(fd, SOL_SOCKET, SO_TYPE, "SO_TYPE");
	get_int(fd, SOL_SOCKET, SO_DOMAIN, "SO_DOMAIN");
	get_int(fd, SOL_SOCKET, SO_PROTOCOL, "SO_PROTOCOL");
	get_int(fd, SOL_SOCKET, SO_ERROR, "SO_ERROR");
	get_int(fd, SOL_SOCKET, SO_ACCEPTCONN, "SO_ACCEPTCONN");
	struct linger lg = { 1, 5 }, lgot;
	socklen_t ll = sizeof lgot;
	E("set SO_LINGER", setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0, 0);
	E("get SO_LINGER", getsockopt(fd, SOL_SOCKET, SO_LINGER, &lgot, &ll), 0, 0);
	out("linger = %d %d len %u\n", lgot.l_onoff, lgot.l_linger, ll);
	lg.l_onoff = 0;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	char small = 1;
	socklen_t sl = 1;
	E("get SO_RCVBUF into 1 byte", getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, &sl), 0, 0);
	out("len = %u\n", sl);
	int v = 1;
	E("set SO_RCVBUF short optlen", setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, 2), -1, EINVAL);
	E("set unknown SOL_SOCKET option", setsockopt(fd, SOL_SOCKET, 9999, &v, sizeof v), -1, ENOPROTOOPT);
	E("get unknown SOL_SOCKET option", getsockopt(fd, SOL_SOCKET, 9999, &v, &(socklen_t){ 4 }), -1, ENOPROTOOPT);
	E("set SO_TYPE (read-only)", setsockopt(fd, SOL_SOCKET, SO_TYPE, &v, sizeof v), -1, ENOPROTOOPT);
	E("set unknown level", setsockopt(fd, 12345, 1, &v, sizeof v), -1, ENOPROTOOPT);
	socklen_t neg = (socklen_t)-1;
	E("get negative optlen", getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &neg), -1, EINVAL);
}

int main(void)
{
	out("== udp\n");
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	common(u);
	rt_int(u, IPPROTO_IP, IP_MULTICAST_TTL, "IP_MULTICAST_TTL", 4);
	rt_int(u, IPPROTO_IP, IP_MULTICAST_LOOP, "IP_MULTICAST_LOOP", 0);
	rt_int(u, IPPROTO_IP, IP_RECVTOS, "IP_RECVTOS", 1);
	rt_int(u, IPPROTO_IP, IP_PKTINFO, "IP_PKTINFO", 1);
	int one = 1;
	V("set TCP_NODELAY on udp", setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
	V("get TCP_NODELAY on udp", getsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, &(socklen_t){ 4 }));

	out("== tcp\n");
	int t = socket(AF_INET, SOCK_STREAM, 0);
	common(t);
	rt_int(t, IPPROTO_TCP, TCP_NODELAY, "TCP_NODELAY", 1);
	rt_int(t, IPPROTO_TCP, TCP_NODELAY, "TCP_NODELAY", 0);
	rt_int(t, IPPROTO_TCP, TCP_KEEPIDLE, "TCP_KEEPIDLE", 30);
	rt_int(t, IPPROTO_TCP, TCP_KEEPINTVL, "TCP_KEEPINTVL", 5);
	rt_int(t, IPPROTO_TCP, TCP_KEEPCNT, "TCP_KEEPCNT", 4);
	rt_int(t, IPPROTO_TCP, TCP_KEEPIDLE, "TCP_KEEPIDLE", 0);
	rt_int(t, IPPROTO_TCP, TCP_QUICKACK, "TCP_QUICKACK", 1);
	rt_int(t, IPPROTO_TCP, TCP_CORK, "TCP_CORK", 1);
	rt_int(t, IPPROTO_TCP, TCP_CORK, "TCP_CORK", 0);
	rt_int(t, IPPROTO_TCP, TCP_MAXSEG, "TCP_MAXSEG", 1000);
	rt_int(t, IPPROTO_TCP, TCP_USER_TIMEOUT, "TCP_USER_TIMEOUT", 1000);

	out("== tcp listener and connection\n");
	int l = tcp_listener(0);
	get_int(l, SOL_SOCKET, SO_ACCEPTCONN, "listener SO_ACCEPTCONN");
	int nd = 1;
	setsockopt(l, IPPROTO_TCP, TCP_NODELAY, &nd, sizeof nd);
	int tos = 0x28;
	setsockopt(l, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
	int c = tcp_connect_port(port_of(l));
	int a = accept(l, NULL, NULL);
	get_int(a, IPPROTO_TCP, TCP_NODELAY, "accepted TCP_NODELAY (inherited)");
	get_int(a, IPPROTO_IP, IP_TOS, "accepted IP_TOS (inherited)");
	get_int(a, SOL_SOCKET, SO_ACCEPTCONN, "accepted SO_ACCEPTCONN");
	rt_int(c, IPPROTO_TCP, TCP_NODELAY, "connected TCP_NODELAY", 1);
	close(a);
	close(c);
	close(l);

	out("== errors\n");
	int v = 1;
	E("setsockopt -1", setsockopt(-1, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v), -1, EBADF);
	E("getsockopt -1", getsockopt(-1, SOL_SOCKET, SO_REUSEADDR, &v, &(socklen_t){ 4 }), -1, EBADF);
	int pp[2];
	if (pipe(pp) < 0)
		die("pipe");
	E("setsockopt pipe", setsockopt(pp[0], SOL_SOCKET, SO_REUSEADDR, &v, sizeof v), -1, ENOTSOCK);
	E("getsockopt pipe", getsockopt(pp[0], SOL_SOCKET, SO_REUSEADDR, &v, &(socklen_t){ 4 }), -1, ENOTSOCK);
	return finish();
}

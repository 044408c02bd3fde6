/* IPv6 and dual-stack UDP over many datagrams (long enough for the shared-memory rings to carry
 * them): a ::1 ping-pong with the source of every reply checked, an IPv4 sender and an IPv6 sender
 * to one dual-stack socket, a dual-stack socket sending to an IPv4 one through a v4-mapped address,
 * a v6only socket that IPv4 does not reach and that cannot send to a mapped address, source
 * addresses into short and exact name buffers (recvfrom and recvmsg, MSG_PEEK and MSG_TRUNC), and
 * datagrams queued when the process forks read by the child (the spilled names are sockaddr_in6). */
#include "common.h"

#include <sys/wait.h>

static int bound6(const char *ip, int v6only)
{
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket6");
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) < 0)
		die("IPV6_V6ONLY");
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof a);
	a.sin6_family = AF_INET6;
	if (inet_pton(AF_INET6, ip, &a.sin6_addr) != 1)
		die("inet_pton %s", ip);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind6 %s", ip);
	return fd;
}

/* from prints a source the kernel wrote: length, family, address, port relative to want_port, and
 * for IPv6 the flow info and scope id. */
static void from(const char *label, const void *sa, socklen_t l, int want_port)
{
	const struct sockaddr *s = sa;
	char ip[64] = "?";
	if (s->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = sa;
		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
		out("%s: len %u AF_INET6 %s port %s flow %u scope %u\n", label, l, ip,
		    ntohs(a->sin6_port) == want_port ? "the sender's" : "other", a->sin6_flowinfo, a->sin6_scope_id);
	} else if (s->sa_family == AF_INET) {
		const struct sockaddr_in *a = sa;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
		out("%s: len %u AF_INET %s port %s\n", label, l, ip, ntohs(a->sin_port) == want_port ? "the sender's" : "other");
	} else {
		out("%s: len %u family %d\n", label, l, s->sa_family);
	}
}

/* pingpong sends n datagrams from a to b's address and echoes each back; it counts the ones whose
 * content and reply source were right. */
static void pingpong(const char *label, int a, int b, const struct sockaddr *to, socklen_t tolen, int n)
{
	char buf[256], msg[64];
	int good = 0, bport = port_of(b), aport = port_of(a);
	for (int i = 0; i < n; i++) {
		int k = snprintf(msg, sizeof msg, "%s %d", label, i);
		if (sendto(a, msg, (size_t)k, 0, to, tolen) != k)
			die("sendto %s", label);
		struct sockaddr_storage s;
		socklen_t l = sizeof s;
		long r = recvfrom(b, buf, sizeof buf, 0, (struct sockaddr *)&s, &l);
		if (r != k || memcmp(buf, msg, (size_t)k) != 0)
			continue;
		if (port_of(b) != bport || ((struct sockaddr_in6 *)&s)->sin6_port != htons((uint16_t)aport))
			continue;
		if (sendto(b, buf, (size_t)r, 0, (struct sockaddr *)&s, l) != r)
			die("echo %s", label);
		l = sizeof s;
		if (recvfrom(a, buf, sizeof buf, 0, (struct sockaddr *)&s, &l) == r && memcmp(buf, msg, (size_t)k) == 0)
			good++;
	}
	out("%s: %d of %d round trips right\n", label, good, n);
}

int main(void)
{
	struct timeval tv = {5, 0};
	int dual = bound6("::", 0), v6 = bound6("::1", 0), only = bound6("::", 1);
	int v4 = udp_bound(0);
	int socks[] = {dual, v6, only, v4};
	for (int i = 0; i < 4; i++)
		setsockopt(socks[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	int dport = port_of(dual), v6port = port_of(v6), oport = port_of(only), v4port = port_of(v4);

	struct sockaddr_in6 to_dual6 = addr6("::1", dport), to_only6 = addr6("::1", oport);
	struct sockaddr_in6 to_v4_mapped = addr6("::ffff:127.0.0.1", v4port), to_only_mapped = addr6("::ffff:127.0.0.1", oport);
	struct sockaddr_in to_dual4 = lo_addr(dport), to_only4 = lo_addr(oport);

	out("-- ping-pong over ::1\n");
	pingpong("v6 to dual", v6, dual, (struct sockaddr *)&to_dual6, sizeof to_dual6, 200);
	out("-- IPv4 to a dual-stack socket\n");
	pingpong("v4 to dual", v4, dual, (struct sockaddr *)&to_dual4, sizeof to_dual4, 200);
	out("-- a dual-stack socket to IPv4 through a mapped address\n");
	pingpong("dual to v4", dual, v4, (struct sockaddr *)&to_v4_mapped, sizeof to_v4_mapped, 200);
	out("-- v6 to a v6only socket\n");
	pingpong("v6 to v6only", v6, only, (struct sockaddr *)&to_only6, sizeof to_only6, 50);

	out("-- the sources as the receiver's family has them\n");
	char buf[64];
	struct sockaddr_storage s;
	socklen_t l;
	E("v4 send", sendto(v4, "four", 4, 0, (struct sockaddr *)&to_dual4, sizeof to_dual4), 4, 0);
	E("v6 send", sendto(v6, "six", 3, 0, (struct sockaddr *)&to_dual6, sizeof to_dual6), 3, 0);
	l = 10;
	E("peek, short name buffer", recvfrom(dual, buf, 2, MSG_PEEK | MSG_TRUNC, (struct sockaddr *)&s, &l), 4, 0);
	out("name length reported %u\n", l);
	l = sizeof s;
	E("recvfrom", recvfrom(dual, buf, sizeof buf, 0, (struct sockaddr *)&s, &l), 4, 0);
	from("IPv4 sender seen by a dual-stack socket", &s, l, v4port);
	struct iovec iov = {buf, 2};
	struct msghdr m = {.msg_name = &s, .msg_namelen = sizeof(struct sockaddr_in6), .msg_iov = &iov, .msg_iovlen = 1};
	E("recvmsg, truncated", recvmsg(dual, &m, 0), 2, 0);
	out("msg_flags MSG_TRUNC %s\n", yesno(m.msg_flags & MSG_TRUNC));
	from("IPv6 sender seen by a dual-stack socket", &s, m.msg_namelen, v6port);
	E("dual send to a mapped address", sendto(dual, "mapped", 6, 0, (struct sockaddr *)&to_v4_mapped, sizeof to_v4_mapped), 6, 0);
	l = sizeof s;
	E("recvfrom", recvfrom(v4, buf, sizeof buf, 0, (struct sockaddr *)&s, &l), 6, 0);
	from("dual-stack sender seen by an IPv4 socket", &s, l, dport);

	out("-- a v6only socket\n");
	E("v4 send to the v6only port", sendto(v4, "x", 1, 0, (struct sockaddr *)&to_only4, sizeof to_only4), 1, 0);
	E("v6only receives nothing from IPv4", recv(only, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	E("v6only send to a mapped address", sendto(only, "x", 1, 0, (struct sockaddr *)&to_only_mapped, sizeof to_only_mapped), -1, ENETUNREACH);

	out("-- datagrams queued at a fork, read by the child\n");
	for (int i = 0; i < 3; i++) {
		char msg[16];
		int k = snprintf(msg, sizeof msg, "queued %d", i);
		E("send", sendto(v6, msg, (size_t)k, 0, (struct sockaddr *)&to_dual6, sizeof to_dual6), k, 0);
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int ok = 0;
		for (int i = 0; i < 3; i++) {
			char want[16];
			int k = snprintf(want, sizeof want, "queued %d", i);
			l = sizeof s;
			long r = recvfrom(dual, buf, sizeof buf, 0, (struct sockaddr *)&s, &l);
			ok += r == k && memcmp(buf, want, (size_t)k) == 0 && l == sizeof(struct sockaddr_in6) &&
			      s.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&s)->sin6_port == htons((uint16_t)v6port);
		}
		_exit(ok == 3 ? 0 : 10 + ok);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	out("child read the queued datagrams with their sources: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	E("parent finds none left", recv(dual, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	return finish();
}

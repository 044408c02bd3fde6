/* Repeated UDP sends to one receiver, the case goxio's trampoline serves without its engine once a
 * first send took the receiver's ring (shim/preload/rsend.c): every later change must be seen at
 * the next send as the kernel sees it. Sendto, send and write; a bad buffer and a bad address
 * after good ones (EFAULT); a send the kernel makes (MSG_DONTROUTE) between ring ones (order);
 * a send larger than UDP allows (EMSGSIZE); shutdown for writing (EPIPE); a connected socket
 * connected elsewhere, and its receiver closed (ECONNREFUSED); an fd number that names another
 * socket after a close; dup'd fds; a dual-stack socket naming one receiver in both families; the
 * receiver's source address as it sees it. */
#include "common.h"
#include <sys/mman.h>

/* drain prints what r holds: each datagram's text and whether it came from port from. */
static void drain(const char *label, int r, int from)
{
	char b[64];
	struct sockaddr_in src;
	socklen_t sl = sizeof src;
	long n;
	out("%s:", label);
	while (wait_readable(r, 200) > 0 && (n = recvfrom(r, b, sizeof b - 1, MSG_DONTWAIT, (struct sockaddr *)&src, &sl)) >= 0) {
		b[n] = 0;
		out(" %s%s", b, ntohs(src.sin_port) == from ? "" : "(from?)");
		sl = sizeof src;
	}
	out("\n");
}

static void sendto_n(int s, int port, const char *tag, int from, int to)
{
	struct sockaddr_in a = lo_addr(port);
	char b[16];
	for (int i = from; i < to; i++) {
		int n = snprintf(b, sizeof b, "%s%d", tag, i);
		if (sendto(s, b, (size_t)n, 0, (struct sockaddr *)&a, sizeof a) != n) {
			out("sendto %s%d = -1 %s\n", tag, i, ename(errno));
			g_fail++;
		}
	}
}

int main(void)
{
	int r = udp_bound(0), r2 = udp_bound(0);
	int rp = port_of(r), rp2 = port_of(r2);
	int s = udp_bound(0), sp = port_of(s);
	struct sockaddr_in ra = lo_addr(rp);

	/* sendto, then a bad buffer and a bad address among good sends */
	sendto_n(s, rp, "a", 0, 5);
	E("sendto bad buffer", sendto(s, (void *)8, 4, 0, (struct sockaddr *)&ra, sizeof ra), -1, EFAULT);
	E("sendto bad address", sendto(s, "x", 1, 0, (struct sockaddr *)8, sizeof ra), -1, EFAULT);
	char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		die("mmap");
	strcpy(page, "m0");
	E("sendto from a fresh page", sendto(s, page, 2, 0, (struct sockaddr *)&ra, sizeof ra), 2, 0);
	sendto_n(s, rp, "a", 5, 8);
	drain("r got", r, sp);

	/* a send the kernel makes between ring ones keeps its place */
	sendto_n(s, rp, "b", 0, 3);
	E("sendto MSG_DONTROUTE", sendto(s, "k0", 2, MSG_DONTROUTE, (struct sockaddr *)&ra, sizeof ra), 2, 0);
	sendto_n(s, rp, "b", 3, 6);
	drain("r got", r, sp);

	/* too big for UDP, zero bytes, flags the kernel refuses */
	static char big[70000];
	E("sendto 70000 bytes", sendto(s, big, sizeof big, 0, (struct sockaddr *)&ra, sizeof ra), -1, EMSGSIZE);
	E("sendto 0 bytes", sendto(s, big, 0, 0, (struct sockaddr *)&ra, sizeof ra), 0, 0);
	E("sendto MSG_OOB", sendto(s, "o", 1, MSG_OOB, (struct sockaddr *)&ra, sizeof ra), -1, EOPNOTSUPP);
	sendto_n(s, rp, "c", 0, 2);
	drain("r got", r, sp);

	/* a dup sends as the socket; a closed fd number that names a new socket sends as that one */
	int d = dup(s);
	sendto_n(d, rp, "d", 0, 3);
	close(d);
	int n2 = udp_bound(0);
	if (n2 != d)
		out("(fd number not reused)\n");
	sendto_n(n2, rp, "n", 0, 3);
	drain("r got (d from s, n from n2)", r, sp);
	drain("r got from n2", r, port_of(n2));

	/* connected: send and write, then connected elsewhere */
	int c = udp_bound(0), cp = port_of(c);
	struct sockaddr_in ra2 = lo_addr(rp2);
	if (connect(c, (struct sockaddr *)&ra, sizeof ra) != 0)
		die("connect");
	for (int i = 0; i < 3; i++) {
		E("send", send(c, "s", 1, 0), 1, 0);
		E("write", write(c, "w", 1), 1, 0);
	}
	if (connect(c, (struct sockaddr *)&ra2, sizeof ra2) != 0)
		die("connect again");
	E("write after connect elsewhere", write(c, "W", 1), 1, 0);
	E("send after connect elsewhere", send(c, "S", 1, 0), 1, 0);
	drain("r got", r, cp);
	drain("r2 got", r2, cp);

	/* the connected receiver closes: the kernel sends, then refuses */
	close(r2);
	E("write to a closed receiver", write(c, "x", 1), 1, 0);
	usleep(20000);
	E("write after the port unreachable", write(c, "y", 1), -1, ECONNREFUSED);

	/* a dual-stack AF_INET6 socket: a v4-mapped destination, then the same as a sockaddr_in (the
	 * kernel takes both), then mapped again: one receiver, the order kept */
	int s6 = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 any6 = addr6("::", 0), m6 = addr6("::ffff:127.0.0.1", rp);
	if (s6 < 0 || bind(s6, (struct sockaddr *)&any6, sizeof any6) != 0)
		die("bind [::]");
	for (int i = 0; i < 6; i++) {
		char b[4] = {'v', (char)('0' + i), 0};
		long w = i == 3 ? sendto(s6, b, 2, 0, (struct sockaddr *)&ra, sizeof ra)
				: sendto(s6, b, 2, 0, (struct sockaddr *)&m6, sizeof m6);
		E(i == 3 ? "sendto sockaddr_in from AF_INET6" : "sendto v4-mapped", w, 2, 0);
	}
	drain("r got from s6", r, port_of(s6));
	close(s6);

	/* shut for writing */
	sendto_n(s, rp, "e", 0, 2);
	V("shutdown SHUT_WR (not connected: the kernel still shuts)", shutdown(s, SHUT_WR));
	E("sendto after SHUT_WR", sendto(s, "z", 1, MSG_NOSIGNAL, (struct sockaddr *)&ra, sizeof ra), -1, EPIPE);
	drain("r got", r, sp);
	close(s);
	close(c);
	close(n2);
	close(r);
	return finish();
}

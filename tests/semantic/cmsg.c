/* Ancillary data on UDP: IP_PKTINFO, IP_RECVTOS, IP_RECVTTL, SO_TIMESTAMP (presence and sanity only),
 * MSG_CTRUNC with a short control buffer, IP_TOS on send via cmsg, IP_RECVERR error queue; and
 * SCM_RIGHTS passing a UDP socket over a unix socketpair. */
#include "common.h"
#include <linux/errqueue.h>

static char lines[16][160];
static int nlines;

/* add buffers one control message line; the order of control messages is not part of the contract,
 * so they are printed sorted. */
static void add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add(const char *fmt, ...)
{
	if (nlines >= 16)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(lines[nlines++], sizeof lines[0], fmt, ap);
	va_end(ap);
}

static int cmpline(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void show_cmsgs(struct msghdr *m)
{
	out("  msg_flags CTRUNC %s, controllen %s\n", yesno(m->msg_flags & MSG_CTRUNC),
	    m->msg_controllen ? "nonzero" : "0");
	nlines = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof pi);
			char dst[32], addr[32];
			inet_ntop(AF_INET, &pi.ipi_spec_dst, dst, sizeof dst);
			inet_ntop(AF_INET, &pi.ipi_addr, addr, sizeof addr);
			add("  IP_PKTINFO ifindex-is-lo %s spec_dst %s addr %s\n", yesno(pi.ipi_ifindex == 1), dst, addr);
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			add("  IP_TOS %d\n", *(unsigned char *)CMSG_DATA(c));
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			int ttl;
			memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
			add("  IP_TTL %d\n", ttl);
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMP) {
			struct timeval tv, now;
			memcpy(&tv, CMSG_DATA(c), sizeof tv);
			gettimeofday(&now, NULL);
			double age = (double)(now.tv_sec - tv.tv_sec) + (double)(now.tv_usec - tv.tv_usec) / 1e6;
			add("  SO_TIMESTAMP recent %s\n", yesno(age >= 0 && age < 5));
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) {
			struct sock_extended_err ee;
			memcpy(&ee, CMSG_DATA(c), sizeof ee);
			add("  IP_RECVERR errno %s origin %d type %d code %d\n", ename((int)ee.ee_errno), ee.ee_origin,
			    ee.ee_type, ee.ee_code);
		} else {
			add("  cmsg level %d type %d len %zu\n", c->cmsg_level, c->cmsg_type, (size_t)c->cmsg_len);
		}
	}
	qsort(lines, (size_t)nlines, sizeof lines[0], cmpline);
	for (int i = 0; i < nlines; i++)
		out("%s", lines[i]);
}

static long recv_with(int fd, char *ctl, size_t ctllen, int flags)
{
	char buf[64];
	struct iovec iov = { buf, sizeof buf };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = ctllen };
	long n = V("recvmsg", recvmsg(fd, &m, flags));
	if (n >= 0)
		show_cmsgs(&m);
	return n;
}

int main(void)
{
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r), one = 1;
	char ctl[512];

	out("-- no options: no control messages\n");
	udp_send_to(s, "plain", 5, rp);
	wait_readable(r, 1000);
	recv_with(r, ctl, sizeof ctl, 0);

	out("-- IP_PKTINFO, IP_RECVTOS, IP_RECVTTL, SO_TIMESTAMP\n");
	setsockopt(r, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
	setsockopt(r, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
	setsockopt(r, IPPROTO_IP, IP_RECVTTL, &one, sizeof one);
	setsockopt(r, SOL_SOCKET, SO_TIMESTAMP, &one, sizeof one);
	int tos = 0x20, ttl = 17;
	setsockopt(s, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
	setsockopt(s, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);
	udp_send_to(s, "opts", 4, rp);
	wait_readable(r, 1000);
	recv_with(r, ctl, sizeof ctl, 0);

	out("-- short control buffer\n");
	udp_send_to(s, "short", 5, rp);
	wait_readable(r, 1000);
	recv_with(r, ctl, CMSG_SPACE(sizeof(struct in_pktinfo)), 0);

	out("-- IP_TOS and IP_TTL given per message\n");
	char sctl[CMSG_SPACE(sizeof(int)) * 2];
	memset(sctl, 0, sizeof sctl);
	struct sockaddr_in to = lo_addr(rp);
	struct iovec iov = { "percmsg", 7 };
	struct msghdr m = { .msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = sctl, .msg_controllen = sizeof sctl };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_TOS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	int t2 = 0x48;
	memcpy(CMSG_DATA(c), &t2, sizeof t2);
	c = CMSG_NXTHDR(&m, c);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_TTL;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	int ttl2 = 9;
	memcpy(CMSG_DATA(c), &ttl2, sizeof ttl2);
	E("sendmsg with cmsgs", sendmsg(s, &m, 0), 7, 0);
	wait_readable(r, 1000);
	recv_with(r, ctl, sizeof ctl, 0);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_type = 9999;
	E("sendmsg with an unknown cmsg", sendmsg(s, &m, 0), -1, EINVAL);

	out("-- IP_RECVERR error queue\n");
	int dead = udp_bound(0);
	int dp = port_of(dead);
	close(dead);
	int e = udp_bound(0);
	setsockopt(e, IPPROTO_IP, IP_RECVERR, &one, sizeof one);
	udp_connect_to(e, dp);
	E("send to dead port", send(e, "x", 1, 0), 1, 0);
	wait_readable(e, 1000);
	out("poll = %s\n", pollbits(poll1(e, POLLIN, 0)));
	recv_with(e, ctl, sizeof ctl, MSG_ERRQUEUE);
	E("error queue empty", recvmsg(e, &(struct msghdr){ .msg_control = ctl, .msg_controllen = sizeof ctl }, MSG_ERRQUEUE), -1, EAGAIN);
	E("reading the queue cleared the pending error", recv(e, ctl, 8, MSG_DONTWAIT), -1, EAGAIN);

	out("-- SCM_RIGHTS: pass a UDP socket over a socketpair\n");
	int sp[2];
	E("socketpair", socketpair(AF_UNIX, SOCK_DGRAM, 0, sp), 0, 0);
	char rctl[CMSG_SPACE(sizeof(int))];
	memset(rctl, 0, sizeof rctl);
	struct iovec i2 = { "fd", 2 };
	struct msghdr fm = { .msg_iov = &i2, .msg_iovlen = 1, .msg_control = rctl, .msg_controllen = sizeof rctl };
	c = CMSG_FIRSTHDR(&fm);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &r, sizeof r);
	E("sendmsg SCM_RIGHTS", sendmsg(sp[0], &fm, 0), 2, 0);
	char b2[8];
	struct iovec i3 = { b2, sizeof b2 };
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr gm = { .msg_iov = &i3, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	E("recvmsg SCM_RIGHTS", recvmsg(sp[1], &gm, 0), 2, 0);
	int got = -1;
	c = CMSG_FIRSTHDR(&gm);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(&got, CMSG_DATA(c), sizeof got);
	CHECK("received a new fd for the same socket", got >= 0 && got != r && port_of(got) == rp);
	close(r);
	udp_send_to(s, "via-passed-fd", 13, rp);
	wait_readable(got, 1000);
	char b3[32];
	long n = E("recv on the passed fd", recv(got, b3, sizeof b3, 0), 13, 0);
	show("data", b3, n);
	close(got);
	close(s);
	close(e);
	return finish();
}

/* One UDP socket's datagrams to one receiver arrive in the order it sent them, whichever way each
 * went: sends before the receiver had a ring (its process loaded nothing yet), sends with ancillary
 * data the kernel sends (IP_PKTINFO), then plain ones, datagrams marked with IP_TOS or IP_TTL among
 * plain ones, and four threads sharing a socket while other sockets come and go (each
 * changes the directory that tells senders where rings are). */
#include "common.h"
#include <sys/wait.h>

#define NS 4
#define PER 300

/* drain reads every datagram queued on r (each carries a sender id and a sequence number) and
 * checks each sender's sequence; next[id] is the number expected. Returns how many it read. */
static int drain(int r, int *next, int *inorder, int ms)
{
	int got = 0;
	while (wait_readable(r, ms) > 0) {
		unsigned char m[8];
		long n;
		while ((n = recv(r, m, sizeof m, MSG_DONTWAIT)) == 4) {
			int id = m[0], seq = m[1] | m[2] << 8;
			if (id >= NS || seq != next[id])
				*inorder = 0;
			else
				next[id]++;
			got++;
		}
	}
	return got;
}

static void put(unsigned char *m, int id, int seq)
{
	m[0] = (unsigned char)id;
	m[1] = (unsigned char)seq;
	m[2] = (unsigned char)(seq >> 8);
	m[3] = 0x55;
}

/* send_ctl sends m (4 bytes) to port with one control message (level, type, data of dlen bytes). */
static long send_ctl(int s, int port, const unsigned char *m, int level, int type, const void *data, size_t dlen)
{
	struct sockaddr_in to = lo_addr(port);
	union {
		char buf[CMSG_SPACE(sizeof(struct in_pktinfo))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct iovec iov = { (void *)m, 4 };
	struct msghdr mh = { .msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf, .msg_controllen = CMSG_SPACE(dlen) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(dlen);
	memcpy(CMSG_DATA(c), data, dlen);
	return sendmsg(s, &mh, 0);
}

/* pair opens a receiver (with a 4 MiB SO_RCVBUF) and a sender, both bound; returns the receiver's
 * port. */
static int pair(int *r, int *s)
{
	int big = 4 << 20;
	*r = udp_bound(0);
	*s = udp_bound(0);
	setsockopt(*r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	return port_of(*r);
}

static int g_rport, g_sock;
static volatile int g_stop;

static void *sender(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int i = 0; i < PER; i++) {
		unsigned char m[4];
		put(m, id, i);
		while (udp_send_to(g_sock, m, 4, g_rport) != 4)
			msleep(1);
		if (i % 30 == 29)
			msleep(1);
	}
	return NULL;
}

static void *churn(void *arg)
{
	(void)arg;
	while (!g_stop) {
		int s = udp_bound(0);
		char b = 0;
		udp_send_to(s, &b, 1, port_of(s));
		recv(s, &b, 1, MSG_DONTWAIT);
		close(s);
	}
	return NULL;
}

int main(void)
{
	int big = 4 << 20;

	out("-- sends before the receiver's process loaded anything, then after\n");
	{
		/* Another process with a bound socket that received: under the library it has rings,
		 * so a directory of them exists when this one starts sending. */
		int p[2], q[2];
		if (pipe(p) < 0 || pipe(q) < 0)
			die("pipe\n");
		pid_t pid = fork();
		if (pid == 0) {
			int s = udp_bound(0);
			char b = 0;
			udp_send_to(s, &b, 1, port_of(s));
			recv(s, &b, 1, 0);
			if (write(p[1], "r", 1) != 1 || read(q[0], &b, 1) < 0)
				_exit(1);
			_exit(0);
		}
		char b;
		if (read(p[0], &b, 1) != 1)
			die("child\n");
		int r = udp_bound(0), s = socket(AF_INET, SOCK_DGRAM, 0);
		setsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
		int port = port_of(r), next[NS] = { 0 }, inorder = 1, got = 0;
		unsigned char m[8];
		for (int i = 0; i < 6; i++) {
			put(m, 0, i);
			udp_send_to(s, m, 4, port);
		}
		/* The receiver's first receive and wait; then more sends, then it reads them all. */
		if (recv(r, m, sizeof m, 0) == 4 && m[1] == 0)
			next[0] = 1, got = 1;
		poll(&(struct pollfd){ .fd = r, .events = POLLIN }, 1, 0);
		for (int i = 6; i < 40; i++) {
			put(m, 0, i);
			udp_send_to(s, m, 4, port);
		}
		got += drain(r, next, &inorder, 200);
		out("received %d of 40, in order: %s\n", got, yesno(inorder));
		if (write(q[1], "x", 1) != 1)
			die("pipe\n");
		waitpid(pid, NULL, 0);
		close(r);
		close(s);
	}

	out("-- sends with ancillary data, then plain ones\n");
	{
		int r, s, port = pair(&r, &s), next[NS] = { 0 }, inorder = 1;
		unsigned char m[8];
		/* a few plain ones first: both sockets are in use when the rest go */
		for (int i = 0; i < 4; i++) {
			put(m, 1, i);
			udp_send_to(s, m, 4, port);
		}
		int got = drain(r, next, &inorder, 50);
		/* IP_PKTINFO choosing the source address: the kernel sends these */
		struct in_pktinfo pi = { .ipi_ifindex = 0 };
		pi.ipi_spec_dst.s_addr = htonl(INADDR_LOOPBACK);
		for (int round = 0; round < 5; round++) {
			for (int i = 0; i < 6; i++) {
				put(m, 1, 4 + round * 12 + i);
				if (send_ctl(s, port, m, IPPROTO_IP, IP_PKTINFO, &pi, sizeof pi) != 4)
					die("sendmsg: %s\n", ename(errno));
			}
			for (int i = 6; i < 12; i++) {
				put(m, 1, 4 + round * 12 + i);
				udp_send_to(s, m, 4, port);
			}
			/* read before the next round: a plain datagram still in a ring when one with
			 * ancillary data goes may be taken after it (offload/transport/shm/order.go) */
			got += drain(r, next, &inorder, 50);
		}
		out("received %d of 64, in order: %s\n", got, yesno(inorder));
		close(r);
		close(s);
	}

	out("-- four threads on one socket while other sockets come and go\n");
	{
		int r = udp_bound(0);
		setsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
		g_rport = port_of(r);
		g_sock = udp_bound(0);
		pthread_t ch, th[NS];
		pthread_create(&ch, NULL, churn, NULL);
		for (intptr_t i = 0; i < NS; i++)
			pthread_create(&th[i], NULL, sender, (void *)i);
		int next[NS] = { 0 }, inorder = 1;
		int got = drain(r, next, &inorder, 500);
		for (int i = 0; i < NS; i++)
			pthread_join(th[i], NULL);
		g_stop = 1;
		pthread_join(ch, NULL);
		out("received %d of %d, each sender's datagrams in order: %s\n", got, NS * PER, yesno(inorder));
		close(r);
		close(g_sock);
	}

	out("-- datagrams marked with IP_TOS or IP_TTL among plain ones, read after\n");
	{
		int r, s, port = pair(&r, &s), next[NS] = { 0 }, inorder = 1;
		unsigned char m[8];
		put(m, 2, 0);
		udp_send_to(s, m, 4, port);
		int got = drain(r, next, &inorder, 50);
		int tos = 0xb8, ttl = 7;
		unsigned char tos8 = 0x10;
		for (int i = 1; i < 61; i++) {
			put(m, 2, i);
			long n;
			switch (i % 4) {
			case 0:
				n = send_ctl(s, port, m, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
				break;
			case 1:
				n = send_ctl(s, port, m, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);
				break;
			case 2:
				n = send_ctl(s, port, m, IPPROTO_IP, IP_TOS, &tos8, sizeof tos8);
				break;
			default:
				n = udp_send_to(s, m, 4, port);
			}
			if (n != 4)
				die("send %d: %s\n", i, ename(errno));
		}
		got += drain(r, next, &inorder, 200);
		out("received %d of 61, in order: %s\n", got, yesno(inorder));
		int bad = 0, big_tos = 300;
		E("sendmsg IP_TTL 0", send_ctl(s, port, m, IPPROTO_IP, IP_TTL, &bad, sizeof bad), -1, EINVAL);
		E("sendmsg IP_TOS 300", send_ctl(s, port, m, IPPROTO_IP, IP_TOS, &big_tos, sizeof big_tos), -1, EINVAL);
		E("sendmsg IP_TTL as a byte", send_ctl(s, port, m, IPPROTO_IP, IP_TTL, &tos8, sizeof tos8), -1, EINVAL);
		CHECK("nothing more arrived", drain(r, next, &inorder, 50) == 0);
		close(r);
		close(s);
	}
	return finish();
}

/* Threads sharing sockets: four senders on one UDP socket to one receiver blocked in epoll_wait and
 * recv, two threads writing records to one TCP socket, a thread blocked in epoll_wait (no timeout)
 * and one in poll woken by sends from another thread. */
#include "common.h"
#include <sys/epoll.h>

#define PER 500
#define NS 4

static int g_rport, g_sock;

static void *udp_sender(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int i = 0; i < PER; i++) {
		unsigned char m[8] = { (unsigned char)id, (unsigned char)i, (unsigned char)(i >> 8), 0x77 };
		while (udp_send_to(g_sock, m, 4, g_rport) != 4)
			msleep(1);
		if (i % 50 == 49)
			msleep(1);
	}
	return NULL;
}

struct rec {
	int fd, id;
};

static void *tcp_writer(void *arg)
{
	struct rec *r = arg;
	char m[16];
	for (int i = 0; i < 1000; i++) {
		/* One send per record: with room in the send buffer a 16-byte send is copied whole under
		 * the socket lock, so records from the two threads never interleave. */
		snprintf(m, sizeof m, "w%d-%06d......", r->id, i);
		if (send_all(r->fd, m, 16) < 0)
			break;
	}
	return NULL;
}

struct waiter {
	int ep, fd;
	int n;
	unsigned events;
};

static void *epoll_waiter(void *arg)
{
	struct waiter *w = arg;
	struct epoll_event ev;
	w->n = epoll_wait(w->ep, &ev, 1, -1);
	w->events = ev.events;
	return NULL;
}

static void *poll_waiter(void *arg)
{
	struct waiter *w = arg;
	struct pollfd p = { w->fd, POLLIN, 0 };
	w->n = poll(&p, 1, -1);
	w->events = (unsigned)p.revents;
	return NULL;
}

int main(void)
{
	out("-- four UDP senders, one receiver\n");
	int r = udp_bound(0);
	int big = 4 << 20;
	setsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	g_rport = port_of(r);
	g_sock = udp_bound(0);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev);
	pthread_t th[NS];
	for (intptr_t i = 0; i < NS; i++)
		pthread_create(&th[i], NULL, udp_sender, (void *)i);
	int next[NS] = { 0 }, got = 0, inorder = 1;
	while (got < NS * PER) {
		struct epoll_event e;
		if (epoll_wait(ep, &e, 1, 3000) != 1)
			break;
		unsigned char m[8];
		long n;
		while ((n = recv(r, m, sizeof m, MSG_DONTWAIT)) == 4) {
			int id = m[0], seq = m[1] | m[2] << 8;
			if (id >= NS || seq != next[id])
				inorder = 0;
			else
				next[id]++;
			got++;
		}
	}
	for (int i = 0; i < NS; i++)
		pthread_join(th[i], NULL);
	out("received %d of %d, each sender's datagrams in order: %s\n", got, NS * PER, yesno(inorder));

	out("-- two threads writing records to one TCP socket\n");
	int c, a;
	tcp_pair(&c, &a);
	/* Room for everything, so no send waits for buffer space halfway through a record. */
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
	struct rec r1 = { c, 1 }, r2 = { c, 2 };
	pthread_t w1, w2;
	pthread_create(&w1, NULL, tcp_writer, &r1);
	pthread_create(&w2, NULL, tcp_writer, &r2);
	int seen[3] = { 0 }, whole = 1;
	char rec[16];
	for (int i = 0; i < 2000; i++) {
		if (recv_all(a, rec, 16) != 16) {
			whole = 0;
			break;
		}
		int id = rec[1] - '0';
		if (rec[0] != 'w' || (id != 1 && id != 2) || atoi(rec + 3) != seen[id])
			whole = 0;
		else
			seen[id]++;
	}
	pthread_join(w1, NULL);
	pthread_join(w2, NULL);
	out("records: writer 1 %d, writer 2 %d, all whole and in order: %s\n", seen[1], seen[2], yesno(whole));

	out("-- blocked waiters woken by another thread\n");
	int x = udp_bound(0);
	int ep2 = epoll_create1(0);
	ev.events = EPOLLIN;
	epoll_ctl(ep2, EPOLL_CTL_ADD, x, &ev);
	struct waiter we = { ep2, x, -2, 0 }, wp = { -1, x, -2, 0 };
	pthread_t t1, t2;
	pthread_create(&t1, NULL, epoll_waiter, &we);
	pthread_create(&t2, NULL, poll_waiter, &wp);
	msleep(150);
	out("still waiting before the send: %s\n", yesno(we.n == -2 && wp.n == -2));
	E("send", udp_send_to(g_sock, "wake", 4, port_of(x)), 4, 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	out("epoll_wait = %d %s, poll = %d %s\n", we.n, pollbits((int)we.events), wp.n, pollbits((int)wp.events));
	close(ep2);
	close(x);
	close(ep);
	close(r);
	close(g_sock);
	close(c);
	close(a);
	return finish();
}

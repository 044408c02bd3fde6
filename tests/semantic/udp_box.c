/* A burst of datagrams received one call at a time, through every plain receive and what may
 * come between them: recvfrom with a full, a short and no address buffer, recv with MSG_TRUNC,
 * read into a short buffer, recvmsg through msghdrs of every shape, a peek, FIONREAD, poll and edge-triggered epoll, a bad
 * buffer, a second descriptor of the socket (dup), a fork, two threads, and a close by another
 * thread while one receives. Under goxio the engine queues the datagrams after the one a receive
 * takes in a box the preload library serves the next receives from (shim/preload/box.c): every
 * datagram must still come once, whole, in order, where the kernel would deliver it. */
#include "common.h"
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

/* len_of is the length of datagram seq (at least 4: the sequence number, then a pattern). */
static size_t len_of(int seq) { return 8 + (size_t)(seq * 7 % 50); }

static void make(unsigned char *m, int seq)
{
	size_t n = len_of(seq);
	m[0] = (unsigned char)seq;
	m[1] = (unsigned char)(seq >> 8);
	m[2] = 0xa5;
	m[3] = 0x5a;
	for (size_t i = 4; i < n; i++)
		m[i] = (unsigned char)(seq * 31 + i);
}

/* check reports whether the n bytes at m are the first n of datagram seq. */
static int check(const unsigned char *m, size_t n, int seq)
{
	unsigned char want[64];
	make(want, seq);
	return n <= len_of(seq) && memcmp(m, want, n) == 0;
}

static int seq_of(const unsigned char *m) { return m[0] | m[1] << 8; }

/* burst sends datagrams first..first+count-1 from s to port. */
static void burst(int s, int port, int first, int count)
{
	for (int i = first; i < first + count; i++) {
		unsigned char m[64];
		make(m, i);
		if (udp_send_to(s, m, len_of(i), port) != (ssize_t)len_of(i))
			die("send %d", i);
	}
}

/* expect receives one datagram with recv into a full buffer and checks it is seq. */
static void expect(const char *label, int fd, int seq)
{
	unsigned char m[64];
	long n = recv(fd, m, sizeof m, 0);
	out("%s: %ld bytes, seq %d, intact %s\n", label, n, n >= 2 ? seq_of(m) : -1,
	    yesno(n == (long)len_of(seq) && check(m, (size_t)n, seq)));
}

static void calls(int r, int s)
{
	int port = port_of(r), sport = port_of(s);
	burst(s, port, 0, 20);
	CHECK("readable after the burst", wait_readable(r, 2000));
	unsigned char m[64];
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	long n = recvfrom(r, m, sizeof m, 0, (struct sockaddr *)&from, &fl);
	out("recvfrom 0: %ld, intact %s, fromlen %u, port is sender's %s\n", n, yesno(check(m, n, 0)), fl,
	    yesno(ntohs(from.sin_port) == sport));
	/* a short address buffer: 2 bytes written, the full length reported */
	memset(&from, 0xee, sizeof from);
	fl = 2;
	n = recvfrom(r, m, sizeof m, 0, (struct sockaddr *)&from, &fl);
	out("recvfrom 1 (2-byte address room): %ld, intact %s, fromlen %u, family %s, port untouched %s\n", n,
	    yesno(check(m, n, 1)), fl, yesno(from.sin_family == AF_INET), yesno(from.sin_port == 0xeeee));
	/* an address without room: the length only */
	fl = 0;
	n = recvfrom(r, m, sizeof m, 0, (struct sockaddr *)&from, &fl);
	out("recvfrom 2 (no address room): %ld, intact %s, fromlen %u\n", n, yesno(check(m, n, 2)), fl);
	/* no address buffer at all */
	n = recvfrom(r, m, sizeof m, 0, NULL, NULL);
	out("recvfrom 3 (no address): %ld, intact %s\n", n, yesno(check(m, n, 3)));
	/* MSG_TRUNC with a short buffer: the datagram's length, 5 bytes copied */
	memset(m, 0, sizeof m);
	n = recv(r, m, 5, MSG_TRUNC);
	out("recv 4 MSG_TRUNC into 5 bytes: %ld, first 5 intact %s, byte 5 untouched %s\n", n, yesno(check(m, 5, 4)),
	    yesno(m[5] == 0));
	/* read into a short buffer: truncated, the rest of the datagram gone */
	n = read(r, m, 6);
	out("read 5 into 6 bytes: %ld, intact %s\n", n, yesno(check(m, 6, 5)));
	/* a peek, then recvmsg: both see datagram 6 */
	n = recv(r, m, sizeof m, MSG_PEEK);
	out("peek: %ld, seq %d\n", n, seq_of(m));
	int avail = -1;
	E("FIONREAD", ioctl(r, FIONREAD, &avail), 0, 0);
	out("FIONREAD: %d\n", avail);
	struct iovec iov = { m, sizeof m };
	struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov, .msg_iovlen = 1 };
	n = recvmsg(r, &mh, 0);
	out("recvmsg 6: %ld, intact %s, namelen %u, flags %d\n", n, yesno(check(m, n, 6)), mh.msg_namelen, mh.msg_flags);
	/* recvmsg into a short buffer: MSG_TRUNC in the flags */
	iov.iov_len = 3;
	n = recvmsg(r, &mh, 0);
	out("recvmsg 7 into 3 bytes: %ld, flags has MSG_TRUNC %s\n", n, yesno(mh.msg_flags & MSG_TRUNC));
	out("poll: %s\n", pollbits(poll1(r, POLLIN, 0)));
	for (int i = 8; i < 20; i++)
		expect("recv", r, i);
	out("poll after the last: %s\n", pollbits(poll1(r, POLLIN, 0)));
	E("recv MSG_DONTWAIT when drained", recv(r, m, sizeof m, MSG_DONTWAIT), -1, EAGAIN);
	/* an empty datagram among others */
	burst(s, port, 20, 2);
	udp_send_to(s, "", 0, port);
	burst(s, port, 22, 2);
	wait_readable(r, 2000);
	expect("recv", r, 20);
	expect("recv", r, 21);
	E("recv the empty one", recv(r, m, sizeof m, 0), 0, 0);
	expect("recv", r, 22);
	expect("recv", r, 23);
}

/* msgs: recvmsg through every shape of msghdr: two buffers (the datagram scattered), a short one
 * (MSG_TRUNC in msg_flags), no name, a short name, a control buffer (nothing in it for a plain
 * datagram), no buffers at all. */
static void msgs(int r, int s)
{
	burst(s, port_of(r), 30, 16);
	wait_readable(r, 2000);
	unsigned char a[10], b[64], m[64];
	struct sockaddr_in from;
	union {
		char buf[64];
		struct cmsghdr align;
	} ctl;
	for (int i = 30; i < 46; i++) {
		struct iovec iov[2] = { { a, sizeof a }, { b, sizeof b } };
		struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = iov, .msg_iovlen = 2 };
		const char *shape = "two buffers";
		switch (i % 6) {
		case 1:
			iov[0].iov_len = 5;
			mh.msg_iovlen = 1;
			shape = "5-byte buffer";
			break;
		case 2:
			mh.msg_name = NULL;
			mh.msg_namelen = 0;
			shape = "no name";
			break;
		case 3:
			mh.msg_namelen = 2;
			shape = "2-byte name";
			break;
		case 4:
			mh.msg_control = ctl.buf;
			mh.msg_controllen = sizeof ctl.buf;
			shape = "control buffer";
			break;
		case 5:
			mh.msg_iovlen = 0;
			shape = "no buffers";
			break;
		}
		memset(a, 0, sizeof a);
		memset(b, 0, sizeof b);
		mh.msg_flags = -1;
		long n = recvmsg(r, &mh, i % 6 == 5 ? MSG_TRUNC : 0);
		size_t got = n < 0 ? 0 : (size_t)n < sizeof a ? (size_t)n : sizeof a;
		memcpy(m, a, got);
		if (n > (long)sizeof a && mh.msg_iovlen == 2)
			memcpy(m + sizeof a, b, (size_t)n - sizeof a);
		int intact = i % 6 == 5 || check(m, i % 6 == 1 ? (size_t)(n < 5 ? n : 5) : (size_t)n, i);
		out("recvmsg %d (%s): %ld, intact %s, namelen %u, flags %d, controllen %zu\n", i, shape, n, yesno(intact),
		    mh.msg_namelen, mh.msg_flags, (size_t)mh.msg_controllen);
	}
}

/* badbuf: a receive into memory the program cannot write fails with EFAULT and the datagram is
 * gone, as in the kernel; the next receive gets the one after it. */
static void badbuf(int r, int s)
{
	burst(s, port_of(r), 100, 6);
	wait_readable(r, 2000);
	expect("recv", r, 100);
	E("recv into a bad buffer", recv(r, (void *)8, 64, 0), -1, EFAULT);
	expect("recv after it", r, 102);
	unsigned char m[64];
	E("recvfrom with a bad address buffer", recvfrom(r, m, sizeof m, 0, (struct sockaddr *)8, &(socklen_t){ 16 }), -1,
	  EFAULT);
	expect("recv after it", r, 104);
	expect("recv", r, 105);
}

/* dup: datagrams taken alternately through two descriptors of the socket come in order. */
static void dups(int r, int s)
{
	int r2 = dup(r);
	burst(s, port_of(r), 200, 12);
	wait_readable(r, 2000);
	int inorder = 1;
	for (int i = 200; i < 212; i++) {
		unsigned char m[64];
		long n = recv(i % 3 == 0 ? r2 : r, m, sizeof m, 0);
		if (n != (long)len_of(i) || !check(m, n, i))
			inorder = 0;
	}
	CHECK("dup: 12 datagrams through two fds, in order", inorder);
	close(r2);
	burst(s, port_of(r), 212, 3);
	wait_readable(r, 2000);
	expect("after the dup closed", r, 212);
	expect("after the dup closed", r, 213);
	expect("after the dup closed", r, 214);
}

/* edge: an edge-triggered epoll reports the burst once; the receives that follow (which move the
 * rest into the box under goxio) make no new edge; a new datagram after the socket was drained
 * does. */
static void edge(int r, int s)
{
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.fd = r }, got[2];
	E("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev), 0, 0);
	burst(s, port_of(r), 300, 8);
	E("epoll_wait: the burst", epoll_wait(ep, got, 2, 2000), 1, 0);
	expect("recv", r, 300);
	expect("recv", r, 301);
	E("epoll_wait: no new edge", epoll_wait(ep, got, 2, 0), 0, 0);
	for (int i = 302; i < 308; i++)
		expect("recv", r, i);
	unsigned char m[64];
	E("recv MSG_DONTWAIT when drained", recv(r, m, sizeof m, MSG_DONTWAIT), -1, EAGAIN);
	burst(s, port_of(r), 308, 1);
	E("epoll_wait: a new datagram", epoll_wait(ep, got, 2, 2000), 1, 0);
	expect("recv", r, 308);
	close(ep);
}

/* forked: the child of a process that took 3 of 10 datagrams receives the other 7, in order. */
static void forked(int r, int s)
{
	burst(s, port_of(r), 400, 10);
	wait_readable(r, 2000);
	for (int i = 400; i < 403; i++)
		expect("parent recv", r, i);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int inorder = 1, got = 0;
		for (int i = 403; i < 410; i++) {
			unsigned char m[64];
			if (!wait_readable(r, 2000))
				break;
			long n = recv(r, m, sizeof m, MSG_DONTWAIT);
			got += n > 0;
			if (n != (long)len_of(i) || !check(m, n, i))
				inorder = 0;
		}
		out("child: %d datagrams, in order %s\n", got, yesno(inorder && got == 7));
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	unsigned char m[64];
	E("parent after the child: recv MSG_DONTWAIT", recv(r, m, sizeof m, MSG_DONTWAIT), -1, EAGAIN);
}

#define TWO_N 4000
static int g_r;
static int g_seen[TWO_N];

static void *taker(void *arg)
{
	long *count = arg;
	for (;;) {
		unsigned char m[64];
		if (!wait_readable(g_r, 300))
			return NULL;
		long n = recv(g_r, m, sizeof m, MSG_DONTWAIT);
		if (n < 4)
			continue;
		int seq = seq_of(m);
		if (seq < TWO_N && check(m, n, seq))
			__atomic_add_fetch(&g_seen[seq], 1, __ATOMIC_RELAXED);
		(*count)++;
	}
}

/* two: two threads receive a stream from one socket: each datagram reaches exactly one of them. */
static void two(int r, int s)
{
	int big = 4 << 20;
	setsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
	g_r = r;
	long c1 = 0, c2 = 0;
	pthread_t t1, t2;
	pthread_create(&t1, NULL, taker, &c1);
	pthread_create(&t2, NULL, taker, &c2);
	for (int i = 0; i < TWO_N; i += 100) {
		burst(s, port_of(r), i, 100);
		msleep(1);
	}
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	int once = 1;
	for (int i = 0; i < TWO_N; i++)
		once &= g_seen[i] == 1;
	CHECK("two threads: every datagram once", once && c1 + c2 == TWO_N);
}

static volatile int g_closing;

static void *closer_rx(void *arg)
{
	int r = (int)(intptr_t)arg;
	unsigned char m[64];
	double end = now_s() + 5;
	while (now_s() < end) {
		long n = recv(r, m, sizeof m, MSG_DONTWAIT);
		if (n < 0 && errno == EBADF)
			return (void *)1;
	}
	return NULL;
}

/* closed: a socket closed by another thread while one receives a stream from it ends that
 * thread's receives with EBADF, and nothing else happens to the process. */
static void closed(void)
{
	int r = udp_bound(0), s = udp_bound(0);
	udp_warm(r, s);
	pthread_t t;
	pthread_create(&t, NULL, closer_rx, (void *)(intptr_t)r);
	for (int k = 0; k < 50; k++)
		burst(s, port_of(r), 0, 40);
	close(r);
	void *ended;
	pthread_join(t, &ended);
	CHECK("receiver ended with EBADF after the close", ended != NULL);
	close(s);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int r = udp_bound(0), s = udp_bound(0);
	udp_warm(r, s);
	calls(r, s);
	msgs(r, s);
	badbuf(r, s);
	dups(r, s);
	edge(r, s);
	two(r, s);
	closed();
	forked(r, s);
	close(r);
	close(s);
	return finish();
}

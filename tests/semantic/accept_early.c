/* accept and short connections in a process whose engine is loaded (under goxio, connections
 * between goxio processes are served in C until they may pair: shim/preload/early.c): the peer
 * address accept writes (own buffer, NULL, a 4-byte buffer, the same buffers again, a bad
 * pointer), names, options, shutdown, poll, and a connection that talks long enough to pair. */
#include "common.h"

/* talk sends n messages from a to b and back, checking each. */
static int talk(int a, int b, int n) {
	for (int j = 0; j < n; j++) {
		unsigned char m[300], r[300];
		size_t len = 20 + (size_t)(j * 37) % 280;
		fill(m, len, (size_t)j);
		if (send_all(a, m, len) != 0 || recv_all(b, r, len) != (long)len || !verify(r, len, (size_t)j))
			return 0;
		if (send_all(b, r, len) != 0 || recv_all(a, m, len) != (long)len || !verify(m, len, (size_t)j))
			return 0;
	}
	return 1;
}

int main(void)
{
	int l = tcp_listener(0);
	int lp = port_of(l);

	out("-- a first connection (loads the engine under goxio)\n");
	int c0 = tcp_connect_port(lp);
	int a0 = (int)OK("accept", accept(l, NULL, NULL));
	CHECK("talk", talk(c0, a0, 3));
	close(c0);
	close(a0);

	out("-- peer addresses\n");
	for (int round = 0; round < 3; round++) {
		struct sockaddr_in pa;
		socklen_t pl = sizeof pa;
		int c = tcp_connect_port(lp);
		memset(&pa, 0xab, sizeof pa);
		int a = (int)OK("accept with a buffer", accept(l, (struct sockaddr *)&pa, &pl));
		out("len = %u, family = %s, port right = %s\n", pl, yesno(pa.sin_family == AF_INET),
		    yesno(ntohs(pa.sin_port) == port_of(c)));
		CHECK("names", peer_port_of(a) == port_of(c) && port_of(a) == lp);
		close(c);
		close(a);

		unsigned char small[4];
		memset(small, 0xcd, sizeof small);
		socklen_t sl = sizeof small;
		c = tcp_connect_port(lp);
		a = (int)OK("accept with a 4-byte buffer", accept4(l, (struct sockaddr *)small, &sl, SOCK_CLOEXEC));
		out("len = %u (full size), family in buffer = %s, cloexec = %s\n", sl, yesno(small[0] == AF_INET),
		    yesno(fcntl(a, F_GETFD) & FD_CLOEXEC));
		CHECK("peer", peer_port_of(a) == port_of(c));
		close(c);
		close(a);

		socklen_t zl = 0;
		c = tcp_connect_port(lp);
		a = (int)OK("accept with length 0", accept(l, (struct sockaddr *)&pa, &zl));
		out("len = %u\n", zl);
		close(c);
		close(a);
	}
	int cb = tcp_connect_port(lp);
	socklen_t bl = sizeof(struct sockaddr_in);
	E("accept with a bad address", accept(l, (struct sockaddr *)8, &bl), -1, EFAULT);
	close(cb);

	out("-- one request each way, as a connection per request makes it\n");
	for (int i = 0; i < 5; i++) {
		int c = tcp_connect_port(lp);
		int one = 1;
		OK("TCP_NODELAY", setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
		struct sockaddr_in pa;
		socklen_t pl = sizeof pa;
		int a = (int)OK("accept", accept(l, (struct sockaddr *)&pa, &pl));
		E("send request", send(c, "q", 1, 0), 1, 0);
		out("poll accepted = %s\n", pollbits(poll1(a, POLLIN, 1000)));
		char b = 0;
		E("read request", read(a, &b, 1), 1, 0);
		E("write answer", write(a, "A", 1), 1, 0);
		E("recv answer", recv(c, &b, 1, 0), 1, 0);
		out("answer = %c\n", b);
		int v = 0;
		socklen_t vl = sizeof v;
		OK("getsockopt TCP_NODELAY", getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &vl));
		out("nodelay = %d\n", v);
		OK("shutdown write", shutdown(c, SHUT_WR));
		E("EOF at the server", read(a, &b, 1), 0, 0);
		E("send after shutdown", send(c, "x", 1, MSG_NOSIGNAL), -1, EPIPE);
		E("write after peer's shutdown", write(a, "B", 1), 1, 0);
		E("recv it", recv(c, &b, 1, 0), 1, 0);
		close(a);
		E("EOF at the client", recv(c, &b, 1, 0), 0, 0);
		close(c);
	}

	out("-- non-blocking connect, completed by a second connect\n");
	for (int i = 0; i < 3; i++) {
		int c = (int)OK("socket", socket(AF_INET, SOCK_STREAM, 0));
		OK("O_NONBLOCK", fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK));
		struct sockaddr_in sa = lo_addr(lp);
		int r = connect(c, (struct sockaddr *)&sa, sizeof sa);
		out("connect: %s\n", r == 0 || errno == EINPROGRESS ? "started" : ename(errno));
		out("poll = %s\n", pollbits(poll1(c, POLLOUT, 1000)));
		int err = -1;
		socklen_t el = sizeof err;
		OK("SO_ERROR", getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el));
		out("SO_ERROR = %d\n", err);
		V("connect again", connect(c, (struct sockaddr *)&sa, sizeof sa));
		E("and again", connect(c, (struct sockaddr *)&sa, sizeof sa), -1, EISCONN);
		OK("blocking", fcntl(c, F_SETFL, fcntl(c, F_GETFL) & ~O_NONBLOCK));
		int a = (int)OK("accept", accept(l, NULL, NULL));
		CHECK("talk 6", talk(c, a, 6));
		close(c);
		close(a);
	}

	out("-- long enough to pair, peeks and partial reads\n");
	int c = tcp_connect_port(lp);
	int a = (int)OK("accept", accept(l, NULL, NULL));
	CHECK("talk 30", talk(c, a, 30));
	E("send 10", send(c, "0123456789", 10, 0), 10, 0);
	char buf[16] = {0};
	wait_bytes(a, 10);
	E("peek 4", recv(a, buf, 4, MSG_PEEK), 4, 0);
	E("read 3", read(a, buf, 3), 3, 0);
	E("read 7", recv(a, buf + 3, 7, MSG_WAITALL), 7, 0);
	show("got", buf, 10);
	CHECK("talk 5 more", talk(a, c, 5));
	close(c);
	E("EOF", read(a, buf, 1), 0, 0);
	close(a);
	close(l);
	return finish();
}

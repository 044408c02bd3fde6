/* MSG_PEEK on UDP and TCP: peeked data stays queued, partial peeks, recvfrom's source address. */
#include "common.h"

static void udp(void)
{
	out("-- udp\n");
	int r = udp_bound(0), s = udp_bound(0);
	char buf[64];
	E("sendto hello", udp_send_to(s, "hello", 5, port_of(r)), 5, 0);
	E("sendto world!", udp_send_to(s, "world!", 6, port_of(r)), 6, 0);
	wait_readable(r, 2000);
	E("recv peek 3", recv(r, buf, 3, MSG_PEEK), 3, 0);
	show("data", buf, 3);
	E("recv peek 64", recv(r, buf, sizeof buf, MSG_PEEK), 5, 0);
	show("data", buf, 5);
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	memset(&from, 0, sizeof from);
	E("recvfrom peek", recvfrom(r, buf, sizeof buf, MSG_PEEK, (struct sockaddr *)&from, &fl), 5, 0);
	CHECK("peek source is sender", fl == sizeof from && ntohs(from.sin_port) == port_of(s) &&
	      from.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	E("recv", recv(r, buf, sizeof buf, 0), 5, 0);
	show("data", buf, 5);
	E("recv peek|dontwait", recv(r, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT), 6, 0);
	E("recv peek again", recv(r, buf, 2, MSG_PEEK), 2, 0);
	show("data", buf, 2);
	E("read", read(r, buf, sizeof buf), 6, 0);
	show("data", buf, 6);
	E("recv peek empty dontwait", recv(r, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT), -1, EAGAIN);
	close(r);
	close(s);
}

static void tcp(void)
{
	out("-- tcp\n");
	int c, s;
	char buf[64];
	tcp_pair(&c, &s);
	E("send abcdef", send(c, "abcdef", 6, 0), 6, 0);
	CHECK("6 bytes arrived", wait_bytes(s, 6));
	E("recv peek 4", recv(s, buf, 4, MSG_PEEK), 4, 0);
	show("data", buf, 4);
	E("recv 2", recv(s, buf, 2, 0), 2, 0);
	show("data", buf, 2);
	E("recv peek 64", recv(s, buf, sizeof buf, MSG_PEEK), 4, 0);
	show("data", buf, 4);
	E("send gh", send(c, "gh", 2, 0), 2, 0);
	CHECK("6 bytes queued", wait_bytes(s, 6));
	E("recv peek spans sends", recv(s, buf, sizeof buf, MSG_PEEK), 6, 0);
	show("data", buf, 6);
	E("recv peek|waitall 6", recv(s, buf, 6, MSG_PEEK | MSG_WAITALL), 6, 0);
	E("recv 64", recv(s, buf, sizeof buf, 0), 6, 0);
	show("data", buf, 6);
	E("recv peek dontwait empty", recv(s, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT), -1, EAGAIN);
	E("shutdown wr", shutdown(c, SHUT_WR), 0, 0);
	wait_readable(s, 2000);
	E("recv peek at eof", recv(s, buf, sizeof buf, MSG_PEEK), 0, 0);
	E("recv at eof", recv(s, buf, sizeof buf, 0), 0, 0);
	close(c);
	close(s);
}

int main(void)
{
	udp();
	tcp();
	return finish();
}

/* MSG_TRUNC: UDP recv returns the real datagram length, recvmsg sets MSG_TRUNC in msg_flags; without
 * MSG_TRUNC the tail of a datagram is discarded; TCP MSG_TRUNC discards bytes. */
#include "common.h"

int main(void)
{
	int r = udp_bound(0), s = udp_bound(0);
	unsigned char big[100], buf[200];
	fill(big, sizeof big, 0);
	int rp = port_of(r);

	out("-- udp recv\n");
	E("send 100", udp_send_to(s, big, 100, rp), 100, 0);
	wait_readable(r, 2000);
	E("recv 0 bytes peek|trunc (size probe)", recv(r, NULL, 0, MSG_PEEK | MSG_TRUNC), 100, 0);
	E("recv 10 peek|trunc", recv(r, buf, 10, MSG_PEEK | MSG_TRUNC), 100, 0);
	E("recv 10 trunc", recv(r, buf, 10, MSG_TRUNC), 100, 0);
	CHECK("first 10 bytes intact", verify(buf, 10, 0));
	E("next recv dontwait", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);

	out("-- udp recv without MSG_TRUNC discards the tail\n");
	E("send 100", udp_send_to(s, big, 100, rp), 100, 0);
	E("send 3", udp_send_to(s, "xyz", 3, rp), 3, 0);
	wait_readable(r, 2000);
	E("recv 10", recv(r, buf, 10, 0), 10, 0);
	E("recv next", recv(r, buf, sizeof buf, 0), 3, 0);
	show("data", buf, 3);

	out("-- udp recvmsg\n");
	E("send 100", udp_send_to(s, big, 100, rp), 100, 0);
	wait_readable(r, 2000);
	struct iovec iov[2] = { { buf, 7 }, { buf + 50, 5 } };
	struct sockaddr_in from;
	struct msghdr m;
	memset(&m, 0, sizeof m);
	m.msg_name = &from;
	m.msg_namelen = sizeof from;
	m.msg_iov = iov;
	m.msg_iovlen = 2;
	m.msg_flags = 0x12345;
	E("recvmsg 12 of 100, peek", recvmsg(r, &m, MSG_PEEK), 12, 0);
	out("msg_flags & MSG_TRUNC = %s\n", yesno(m.msg_flags & MSG_TRUNC));
	m.msg_flags = 0;
	m.msg_namelen = sizeof from;
	E("recvmsg 12 of 100", recvmsg(r, &m, 0), 12, 0);
	out("msg_flags & MSG_TRUNC = %s\n", yesno(m.msg_flags & MSG_TRUNC));
	CHECK("scatter kept order", verify(buf, 7, 0) && verify(buf + 50, 5, 7));
	CHECK("msg_name is sender", m.msg_namelen == sizeof from && ntohs(from.sin_port) == port_of(s));
	E("send 100", udp_send_to(s, big, 100, rp), 100, 0);
	wait_readable(r, 2000);
	m.msg_flags = 0;
	E("recvmsg 12 of 100 with MSG_TRUNC", recvmsg(r, &m, MSG_TRUNC), 100, 0);
	out("msg_flags & MSG_TRUNC = %s\n", yesno(m.msg_flags & MSG_TRUNC));
	E("send 12", udp_send_to(s, big, 12, rp), 12, 0);
	wait_readable(r, 2000);
	m.msg_flags = 0;
	E("recvmsg exact fit", recvmsg(r, &m, 0), 12, 0);
	out("msg_flags & MSG_TRUNC = %s\n", yesno(m.msg_flags & MSG_TRUNC));

	out("-- tcp MSG_TRUNC discards\n");
	int c, a;
	tcp_pair(&c, &a);
	E("send 100", send(c, big, 100, 0), 100, 0);
	CHECK("100 bytes arrived", wait_bytes(a, 100));
	E("recv NULL 30 trunc", recv(a, NULL, 30, MSG_TRUNC), 30, 0);
	E("recv 10", recv(a, buf, 10, 0), 10, 0);
	CHECK("data after discarded bytes", verify(buf, 10, 30));
	int avail = -1;
	ioctl(a, FIONREAD, &avail);
	out("FIONREAD = %d\n", avail);
	close(c);
	close(a);
	close(r);
	close(s);
	return finish();
}

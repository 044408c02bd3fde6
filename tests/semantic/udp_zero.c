/* Zero-length UDP datagrams are real datagrams: they are sent, polled, counted by FIONREAD as 0,
 * received as 0 with the sender's address, and keep their place in the queue. */
#include "common.h"

int main(void)
{
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r);
	char buf[64];
	E("poll before", poll1(r, POLLIN, 0), 0, 0);
	E("sendto empty", udp_send_to(s, "", 0, rp), 0, 0);
	E("sendto abc", udp_send_to(s, "abc", 3, rp), 3, 0);
	E("sendto NULL 0", udp_send_to(s, NULL, 0, rp), 0, 0);
	wait_readable(r, 2000);
	msleep(20);
	out("poll = %s\n", pollbits(poll1(r, POLLIN, 0)));
	int avail = -1;
	E("ioctl FIONREAD", ioctl(r, FIONREAD, &avail), 0, 0);
	out("FIONREAD = %d\n", avail);
	struct sockaddr_in from;
	socklen_t fl = sizeof from;
	E("recvfrom", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 0, 0);
	CHECK("source is sender", ntohs(from.sin_port) == port_of(s));
	E("recv", recv(r, buf, sizeof buf, 0), 3, 0);
	show("data", buf, 3);
	E("recv peek|trunc", recv(r, buf, sizeof buf, MSG_PEEK | MSG_TRUNC), 0, 0);
	E("read", read(r, buf, sizeof buf), 0, 0);
	E("recv dontwait", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	out("poll after = %s\n", pollbits(poll1(r, POLLIN, 0)));

	out("-- connected send/write of 0 bytes\n");
	E("connect", udp_connect_to(s, rp), 0, 0);
	E("send empty", send(s, "", 0, 0), 0, 0);
	E("write empty", write(s, "", 0), 0, 0);
	wait_readable(r, 2000);
	msleep(20);
	E("recv 1 (send)", recv(r, buf, sizeof buf, MSG_DONTWAIT), 0, 0);
	E("recv 2 (write)", recv(r, buf, sizeof buf, MSG_DONTWAIT), 0, 0);
	E("recv 3", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);

	out("-- recvmsg of an empty datagram\n");
	E("send empty", send(s, "", 0, 0), 0, 0);
	wait_readable(r, 2000);
	struct iovec iov = { buf, sizeof buf };
	struct msghdr m;
	memset(&m, 0, sizeof m);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	E("recvmsg", recvmsg(r, &m, 0), 0, 0);
	out("msg_flags = %d\n", m.msg_flags);
	close(r);
	close(s);
	return finish();
}

/* Scatter/gather: readv/writev on TCP and UDP, sendmsg/recvmsg with several iovecs, msg_name and
 * msg_namelen, MSG_TRUNC in msg_flags, empty iovecs, too many iovecs; recvmmsg/sendmmsg batches. */
#include "common.h"
#include <limits.h>
#include <sys/uio.h>

int main(void)
{
	unsigned char a1[3], a2[5], a3[100];
	int c, s;

	out("-- tcp writev/readv\n");
	tcp_pair(&c, &s);
	struct iovec w[4] = { { "abc", 3 }, { "", 0 }, { "defgh", 5 }, { "ij", 2 } };
	E("writev", writev(c, w, 4), 10, 0);
	CHECK("arrived", wait_bytes(s, 10));
	struct iovec rv[3] = { { a1, 3 }, { a2, 5 }, { a3, sizeof a3 } };
	E("readv", readv(s, rv, 3), 10, 0);
	show("part 1", a1, 3);
	show("part 2", a2, 5);
	show("part 3", a3, 2);
	E("writev zero iovecs", writev(c, w, 0), 0, 0);
	volatile int too_many = IOV_MAX + 1, negative = -1;
	E("readv too many iovecs", readv(s, rv, too_many), -1, EINVAL);
	E("writev negative count", writev(c, w, negative), -1, EINVAL);

	out("-- tcp sendmsg/recvmsg\n");
	struct msghdr m;
	memset(&m, 0, sizeof m);
	m.msg_iov = w;
	m.msg_iovlen = 4;
	E("sendmsg", sendmsg(c, &m, 0), 10, 0);
	CHECK("arrived", wait_bytes(s, 10));
	memset(&m, 0, sizeof m);
	m.msg_iov = rv;
	m.msg_iovlen = 2;
	m.msg_flags = -1;
	E("recvmsg 8 of 10", recvmsg(s, &m, 0), 8, 0);
	out("msg_flags = %d\n", m.msg_flags);
	show("part 1", a1, 3);
	show("part 2", a2, 5);
	struct sockaddr_in nm;
	memset(&nm, 0, sizeof nm);
	m.msg_name = &nm;
	m.msg_namelen = sizeof nm;
	E("recvmsg rest with msg_name", recvmsg(s, &m, 0), 2, 0);
	out("tcp msg_namelen = %u\n", m.msg_namelen);
	close(c);
	close(s);

	out("-- udp writev/readv (one datagram)\n");
	int r = udp_bound(0), u = udp_bound(0);
	udp_connect_to(u, port_of(r));
	E("writev", writev(u, w, 4), 10, 0);
	wait_readable(r, 1000);
	E("readv 8 of a 10-byte datagram", readv(r, rv, 2), 8, 0);
	show("part 2", a2, 5);
	E("nothing left", recv(r, a3, sizeof a3, MSG_DONTWAIT), -1, EAGAIN);

	out("-- udp sendmsg/recvmsg\n");
	struct sockaddr_in to = lo_addr(port_of(r));
	int v = udp_bound(0);
	memset(&m, 0, sizeof m);
	m.msg_name = &to;
	m.msg_namelen = sizeof to;
	m.msg_iov = w;
	m.msg_iovlen = 4;
	E("sendmsg with msg_name", sendmsg(v, &m, 0), 10, 0);
	m.msg_name = NULL;
	m.msg_namelen = 0;
	E("sendmsg without name, unconnected", sendmsg(v, &m, 0), -1, EDESTADDRREQ);
	wait_readable(r, 1000);
	memset(&m, 0, sizeof m);
	m.msg_name = &nm;
	m.msg_namelen = sizeof nm;
	m.msg_iov = rv;
	m.msg_iovlen = 2;
	E("recvmsg 8 of 10", recvmsg(r, &m, 0), 8, 0);
	out("MSG_TRUNC = %s, namelen = %u, from sender = %s\n", yesno(m.msg_flags & MSG_TRUNC), m.msg_namelen,
	    yesno(ntohs(nm.sin_port) == port_of(v)));
	E("sendmsg via connected", sendmsg(u, &(struct msghdr){ .msg_iov = w, .msg_iovlen = 1 }, 0), 3, 0);
	wait_readable(r, 1000);
	m.msg_namelen = 3;
	E("recvmsg short namelen", recvmsg(r, &m, 0), 3, 0);
	out("namelen = %u\n", m.msg_namelen);

	out("-- sendmmsg/recvmmsg\n");
	struct mmsghdr mm[5];
	struct iovec iv[5];
	char payload[5][8];
	memset(mm, 0, sizeof mm);
	for (int i = 0; i < 5; i++) {
		int n = snprintf(payload[i], sizeof payload[i], "m%d%.*s", i, i, "xxxx");
		iv[i] = (struct iovec){ payload[i], (size_t)n };
		mm[i].msg_hdr.msg_iov = &iv[i];
		mm[i].msg_hdr.msg_iovlen = 1;
		mm[i].msg_hdr.msg_name = &to;
		mm[i].msg_hdr.msg_namelen = sizeof to;
	}
	E("sendmmsg 5", sendmmsg(v, mm, 5, 0), 5, 0);
	for (int i = 0; i < 5; i++)
		out("  sent[%d] msg_len = %u\n", i, mm[i].msg_len);
	msleep(20);
	struct mmsghdr rm[8];
	struct iovec riv[8];
	char rb[8][4];
	struct sockaddr_in rn[8];
	memset(rm, 0, sizeof rm);
	for (int i = 0; i < 8; i++) {
		riv[i] = (struct iovec){ rb[i], sizeof rb[i] };
		rm[i].msg_hdr.msg_iov = &riv[i];
		rm[i].msg_hdr.msg_iovlen = 1;
		rm[i].msg_hdr.msg_name = &rn[i];
		rm[i].msg_hdr.msg_namelen = sizeof rn[i];
	}
	int n = (int)E("recvmmsg 8 dontwait", recvmmsg(r, rm, 8, MSG_DONTWAIT, NULL), 5, 0);
	for (int i = 0; i < n; i++) {
		out("  [%d] len %u trunc %s from sender %s ", i, rm[i].msg_len,
		    yesno(rm[i].msg_hdr.msg_flags & MSG_TRUNC), yesno(ntohs(rn[i].sin_port) == port_of(v)));
		show("data", rb[i], rm[i].msg_len < 4 ? rm[i].msg_len : 4);
	}
	E("recvmmsg empty dontwait", recvmmsg(r, rm, 8, MSG_DONTWAIT, NULL), -1, EAGAIN);
	E("sendmmsg 2", sendmmsg(v, mm, 2, 0), 2, 0);
	wait_readable(r, 1000);
	msleep(20);
	E("recvmmsg waitforone", recvmmsg(r, rm, 8, MSG_WAITFORONE, NULL), 2, 0);
	E("sendmmsg 1", sendmmsg(v, mm, 1, 0), 1, 0);
	struct timespec ts = { 0, 200000000 };
	wait_readable(r, 1000);
	E("recvmmsg 3 waitforone with timeout, 1 available", recvmmsg(r, rm, 3, MSG_WAITFORONE, &ts), 1, 0);
	E("recvmmsg vlen 0", recvmmsg(r, rm, 0, MSG_DONTWAIT, NULL), 0, 0);
	E("sendmmsg vlen 0", sendmmsg(v, mm, 0, 0), 0, 0);
	mm[1].msg_hdr.msg_namelen = 3;
	E("sendmmsg with a bad second entry", sendmmsg(v, mm, 3, 0), 1, 0);
	E("sendmmsg with a bad first entry", sendmmsg(v, mm + 1, 2, 0), -1, EINVAL);
	msleep(20);
	E("recvmmsg the one sent", recvmmsg(r, rm, 8, MSG_DONTWAIT, NULL), 1, 0);

	out("-- tcp sendmmsg/recvmmsg\n");
	tcp_pair(&c, &s);
	for (int i = 0; i < 5; i++) {
		mm[i].msg_hdr.msg_name = NULL;
		mm[i].msg_hdr.msg_namelen = 0;
	}
	E("sendmmsg 5 on tcp", sendmmsg(c, mm, 5, 0), 5, 0);
	CHECK("arrived", wait_bytes(s, 20));
	n = (int)V("recvmmsg on tcp", recvmmsg(s, rm, 8, MSG_DONTWAIT, NULL));
	long total = 0;
	for (int i = 0; i < n; i++)
		total += rm[i].msg_len;
	out("total bytes = %ld\n", total);
	close(c);
	close(s);
	return finish();
}

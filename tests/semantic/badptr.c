/* Bad pointers and lengths reach the kernel's checks: EFAULT for unmapped buffers, addresses, option
 * values, message headers, poll arrays and epoll event arrays; EINVAL for bad address lengths. The
 * program must get the error, not crash. */
#include "common.h"
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/uio.h>

static void *volatile bad = (void *)16;
static void *volatile nul = NULL;

int main(void)
{
	char buf[64];
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r);
	struct sockaddr_in to = lo_addr(rp);

	out("-- udp receive into bad buffers\n");
	udp_send_to(s, "first", 5, rp);
	udp_send_to(s, "second", 6, rp);
	wait_readable(r, 1000);
	msleep(20);
	E("recv into NULL, len 10", recv(r, nul, 10, 0), -1, EFAULT);
	long n = V("next recv", recv(r, buf, sizeof buf, MSG_DONTWAIT));
	show("data", buf, n > 0 ? n : 0);
	udp_send_to(s, "third", 5, rp);
	wait_readable(r, 1000);
	E("recv into unmapped address", recv(r, bad, 10, 0), -1, EFAULT);
	udp_send_to(s, "fourth", 6, rp);
	wait_readable(r, 1000);
	socklen_t fl = sizeof to;
	E("recvfrom with unmapped source address", recvfrom(r, buf, sizeof buf, 0, bad, &fl), -1, EFAULT);
	udp_send_to(s, "fifth", 5, rp);
	wait_readable(r, 1000);
	E("recvfrom with unmapped addrlen", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&to, bad), -1, EFAULT);
	E("those datagrams were consumed", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	udp_send_to(s, "sixth", 5, rp);
	wait_readable(r, 1000);
	E("recv NULL len 0 discards a datagram", recv(r, nul, 0, 0), 0, 0);
	E("recvmsg NULL msghdr", recvmsg(r, nul, MSG_DONTWAIT), -1, EFAULT);
	struct msghdr m = { .msg_iov = bad, .msg_iovlen = 1 };
	E("recvmsg unmapped iovec", recvmsg(r, &m, MSG_DONTWAIT), -1, EFAULT);
	E("readv unmapped iovec", readv(r, bad, 1), -1, EFAULT);
	n = V("drain", recv(r, buf, sizeof buf, MSG_DONTWAIT));

	out("-- udp send from bad buffers and addresses\n");
	E("sendto from NULL, len 10", sendto(s, nul, 10, 0, (struct sockaddr *)&to, sizeof to), -1, EFAULT);
	E("sendto unmapped address", sendto(s, "x", 1, 0, bad, sizeof to), -1, EFAULT);
	E("sendto addrlen 3", sendto(s, "x", 1, 0, (struct sockaddr *)&to, 3), -1, EINVAL);
	E("sendto addrlen 1000", sendto(s, "x", 1, 0, (struct sockaddr *)&to, 1000), -1, EINVAL);
	E("sendto addrlen -1", sendto(s, "x", 1, 0, (struct sockaddr *)&to, (socklen_t)-1), -1, EINVAL);
	E("sendto NULL address, len 16", sendto(s, "x", 1, 0, nul, sizeof to), -1, EDESTADDRREQ);
	E("sendmsg NULL msghdr", sendmsg(s, nul, 0), -1, EFAULT);
	m = (struct msghdr){ .msg_name = &to, .msg_namelen = sizeof to, .msg_iov = bad, .msg_iovlen = 1 };
	E("sendmsg unmapped iovec", sendmsg(s, &m, 0), -1, EFAULT);
	E("writev unmapped iovec", writev(s, bad, 1), -1, EFAULT);
	E("nothing arrived", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);

	out("-- tcp\n");
	int c, a;
	tcp_pair(&c, &a);
	E("send", send(c, "stream", 6, 0), 6, 0);
	wait_bytes(a, 6);
	E("recv into NULL, len 10", recv(a, nul, 10, 0), -1, EFAULT);
	n = E("data still there", recv(a, buf, sizeof buf, 0), 6, 0);
	show("data", buf, n);
	E("send from NULL, len 10", send(c, nul, 10, MSG_NOSIGNAL), -1, EFAULT);
	E("nothing arrived", recv(a, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);

	out("-- addresses and options\n");
	int t = socket(AF_INET, SOCK_DGRAM, 0);
	E("bind unmapped address", bind(t, bad, sizeof to), -1, EFAULT);
	E("bind addrlen 0", bind(t, (struct sockaddr *)&to, 0), -1, EINVAL);
	E("connect unmapped address", connect(t, bad, sizeof to), -1, EFAULT);
	socklen_t al = sizeof to;
	E("getsockname NULL addrlen", getsockname(r, (struct sockaddr *)&to, nul), -1, EFAULT);
	E("getsockname unmapped address", getsockname(r, bad, &al), -1, EFAULT);
	E("getpeername unmapped addrlen", getpeername(c, (struct sockaddr *)&to, bad), -1, EFAULT);
	int v = 1;
	socklen_t vl = sizeof v;
	E("setsockopt NULL value", setsockopt(r, SOL_SOCKET, SO_RCVBUF, nul, 4), -1, EFAULT);
	E("getsockopt NULL value", getsockopt(r, SOL_SOCKET, SO_RCVBUF, nul, &vl), -1, EFAULT);
	E("getsockopt NULL optlen", getsockopt(r, SOL_SOCKET, SO_RCVBUF, &v, nul), -1, EFAULT);
	E("ioctl FIONREAD NULL", ioctl(r, FIONREAD, nul), -1, EFAULT);
	E("ioctl FIONBIO NULL", ioctl(r, FIONBIO, nul), -1, EFAULT);

	out("-- iomux\n");
	udp_send_to(s, "ready", 5, rp);
	wait_readable(r, 1000);
	E("poll unmapped array", poll(bad, 1, 0), -1, EFAULT);
	fd_set *fs = bad;
	struct timeval tv = { 0, 0 };
	E("select unmapped fd_set", select(r + 1, fs, NULL, NULL, &tv), -1, EFAULT);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev);
	E("epoll_wait unmapped events, one ready", epoll_wait(ep, bad, 1, 0), -1, EFAULT);
	E("epoll_ctl unmapped event", epoll_ctl(ep, EPOLL_CTL_MOD, r, bad), -1, EFAULT);
	E("epoll_wait still reports", epoll_wait(ep, &ev, 1, 0), 1, 0);
	E("recv", recv(r, buf, sizeof buf, 0), 5, 0);

	close(ep);
	close(t);
	close(c);
	close(a);
	close(r);
	close(s);
	return finish();
}

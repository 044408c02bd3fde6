/* ioctl and fcntl on sockets: FIONREAD (UDP: next datagram's size; TCP: bytes queued), SIOCOUTQ,
 * SIOCINQ, FIONBIO; fcntl F_GETFL/F_SETFL round trips (O_NONBLOCK, O_APPEND ignored, access mode
 * kept), F_GETFD/F_SETFD, F_SETOWN/F_GETOWN, unknown ioctl. */
#include "common.h"
#include <linux/sockios.h>

int main(void)
{
	int r = udp_bound(0), s = udp_bound(0);
	int rp = port_of(r);
	int v = -1;

	out("-- FIONREAD on udp\n");
	E("FIONREAD empty", ioctl(r, FIONREAD, &v), 0, 0);
	out("value = %d\n", v);
	udp_send_to(s, "12345", 5, rp);
	udp_send_to(s, "1234567890", 10, rp);
	wait_readable(r, 1000);
	msleep(20);
	E("FIONREAD two datagrams", ioctl(r, FIONREAD, &v), 0, 0);
	out("value = %d (first datagram's size)\n", v);
	E("SIOCINQ", ioctl(r, SIOCINQ, &v), 0, 0);
	out("value = %d\n", v);
	char buf[32];
	recv(r, buf, sizeof buf, 0);
	ioctl(r, FIONREAD, &v);
	out("after one recv = %d\n", v);
	recv(r, buf, sizeof buf, 0);
	E("SIOCOUTQ udp", ioctl(s, SIOCOUTQ, &v), 0, 0);
	out("value = %d\n", v);

	out("-- FIONREAD on tcp\n");
	int c, a;
	tcp_pair(&c, &a);
	send(c, "12345", 5, 0);
	send(c, "1234567890", 10, 0);
	wait_bytes(a, 15);
	E("FIONREAD", ioctl(a, FIONREAD, &v), 0, 0);
	out("value = %d\n", v);
	recv(a, buf, 7, 0);
	ioctl(a, FIONREAD, &v);
	out("after reading 7 = %d\n", v);
	int l = tcp_listener(0);
	E("FIONREAD on a listener", ioctl(l, FIONREAD, &v), -1, EINVAL);
	msleep(20);
	E("SIOCOUTQ tcp", ioctl(c, SIOCOUTQ, &v), 0, 0);
	out("value = %d\n", v);
	E("SIOCATMARK", ioctl(a, SIOCATMARK, &v), 0, 0);
	out("value = %d\n", v);

	out("-- FIONBIO\n");
	int on = 1;
	E("FIONBIO 1", ioctl(r, FIONBIO, &on), 0, 0);
	out("F_GETFL O_NONBLOCK = %s\n", yesno(fcntl(r, F_GETFL) & O_NONBLOCK));
	on = 0;
	E("FIONBIO 0", ioctl(r, FIONBIO, &on), 0, 0);
	out("F_GETFL O_NONBLOCK = %s\n", yesno(fcntl(r, F_GETFL) & O_NONBLOCK));
	E("SIOCDEVPRIVATE-range ioctl", ioctl(r, 0x89ff, &v), -1, ENODEV);
	E("unknown socket ioctl", ioctl(r, 0x8999, &v), -1, ENOTTY);

	out("-- fcntl\n");
	int fl = fcntl(r, F_GETFL);
	out("F_GETFL = 0x%x\n", fl);
	E("F_SETFL O_NONBLOCK", fcntl(r, F_SETFL, fl | O_NONBLOCK), 0, 0);
	out("F_GETFL = 0x%x\n", fcntl(r, F_GETFL));
	E("F_SETFL O_APPEND|O_NONBLOCK", fcntl(r, F_SETFL, O_APPEND | O_NONBLOCK), 0, 0);
	out("F_GETFL = 0x%x\n", fcntl(r, F_GETFL));
	E("F_SETFL O_RDONLY (access mode ignored)", fcntl(r, F_SETFL, O_RDONLY), 0, 0);
	out("F_GETFL = 0x%x\n", fcntl(r, F_GETFL));
	E("F_SETFL O_ASYNC", fcntl(r, F_SETFL, O_ASYNC), 0, 0);
	out("F_GETFL = 0x%x\n", fcntl(r, F_GETFL));
	fcntl(r, F_SETFL, 0);
	out("F_GETFD = %d\n", fcntl(r, F_GETFD));
	E("F_SETFD FD_CLOEXEC", fcntl(r, F_SETFD, FD_CLOEXEC), 0, 0);
	out("F_GETFD = %d\n", fcntl(r, F_GETFD));
	E("F_SETFD 0", fcntl(r, F_SETFD, 0), 0, 0);
	out("F_GETFD = %d\n", fcntl(r, F_GETFD));
	E("F_SETOWN self", fcntl(r, F_SETOWN, getpid()), 0, 0);
	out("F_GETOWN is self = %s\n", yesno(fcntl(r, F_GETOWN) == getpid()));
	E("F_GETLK on a socket", fcntl(r, F_GETLK, &(struct flock){ .l_type = F_RDLCK }), 0, 0);
	E("unknown fcntl", fcntl(r, 12345), -1, EINVAL);
	int sc = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	out("SOCK_CLOEXEC|SOCK_NONBLOCK: F_GETFD = %d, F_GETFL = 0x%x\n", fcntl(sc, F_GETFD), fcntl(sc, F_GETFL));
	E("socket bad type flags", socket(AF_INET, SOCK_DGRAM | 0x40000000, 0), -1, EINVAL);
	close(sc);
	close(l);
	close(c);
	close(a);
	close(r);
	close(s);
	return finish();
}

/* sendfile from a regular file to a TCP socket: with an offset pointer (file position untouched), with
 * NULL (file position advances), a count past the end, at EOF; to a UDP socket; errors. */
#include "common.h"
#include <sys/sendfile.h>

#define FSIZE 300000

struct sink {
	int fd;
	long want, got;
	int intact;
	size_t off;
};

static void *drain(void *arg)
{
	struct sink *k = arg;
	static unsigned char buf[65536];
	k->intact = 1;
	while (k->got < k->want) {
		long n = recv(k->fd, buf, sizeof buf, 0);
		if (n <= 0)
			break;
		if (!verify(buf, (size_t)n, k->off + (size_t)k->got))
			k->intact = 0;
		k->got += n;
	}
	return NULL;
}

int main(void)
{
	char path[] = "/tmp/goxio-sendfile-XXXXXX";
	int f = mkstemp(path);
	if (f < 0)
		die("mkstemp");
	unlink(path);
	static unsigned char data[FSIZE];
	fill(data, FSIZE, 0);
	if (write(f, data, FSIZE) != FSIZE)
		die("write file");
	int c, s;
	tcp_pair(&c, &s);
	struct sink k = { s, 0, 0, 1, 0 };
	pthread_t th;

	out("-- with an offset pointer\n");
	off_t off = 1000;
	k.want = 200000;
	k.off = 1000;
	pthread_create(&th, NULL, drain, &k);
	long total = 0;
	while (total < 200000) {
		long n = sendfile(c, f, &off, (size_t)(200000 - total));
		if (n <= 0) {
			V("sendfile", n);
			break;
		}
		total += n;
	}
	pthread_join(th, NULL);
	out("sent = %ld, offset now = %ld, file position = %ld\n", total, (long)off, (long)lseek(f, 0, SEEK_CUR));
	out("received = %ld intact = %s\n", k.got, yesno(k.intact));

	out("-- NULL offset uses and advances the file position\n");
	lseek(f, 250000, SEEK_SET);
	k = (struct sink){ s, 50000, 0, 1, 250000 };
	pthread_create(&th, NULL, drain, &k);
	total = 0;
	for (;;) {
		long n = sendfile(c, f, NULL, 1 << 20);
		if (n <= 0) {
			E("sendfile at EOF", n, 0, 0);
			break;
		}
		total += n;
	}
	pthread_join(th, NULL);
	out("sent = %ld, file position = %ld\n", total, (long)lseek(f, 0, SEEK_CUR));
	out("received = %ld intact = %s\n", k.got, yesno(k.intact));
	off = FSIZE;
	E("sendfile offset at end", sendfile(c, f, &off, 100), 0, 0);
	E("sendfile count 0", sendfile(c, f, NULL, 0), 0, 0);

	out("-- to a UDP socket\n");
	int r = udp_bound(0), u = udp_bound(0);
	udp_connect_to(u, port_of(r));
	off = 5;
	E("sendfile 100 to udp", sendfile(u, f, &off, 100), 100, 0);
	wait_readable(r, 1000);
	unsigned char buf[200];
	E("recv datagram", recv(r, buf, sizeof buf, 0), 100, 0);
	CHECK("datagram content", verify(buf, 100, 5));

	out("-- errors\n");
	off = 0;
	E("sendfile from a socket", sendfile(c, s, &off, 10), -1, ESPIPE);
	E("sendfile to a closed fd", sendfile(-1, f, &off, 10), -1, EBADF);
	int wo = open("/dev/null", O_WRONLY);
	E("sendfile from write-only fd", sendfile(c, wo, &off, 10), -1, EBADF);
	off = -1;
	E("sendfile negative offset", sendfile(c, f, &off, 10), -1, EINVAL);
	close(c);
	msleep(20);
	off = 0;
	E("sendfile to a reset connection", sendfile(s, f, &off, 10), 10, 0);
	msleep(50);
	signal(SIGPIPE, SIG_IGN);
	E("sendfile after RST", sendfile(s, f, &off, 10), -1, EPIPE);
	close(s);
	close(f);
	return finish();
}

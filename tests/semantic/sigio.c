/* O_ASYNC, F_SETOWN and F_SETSIG: a socket in asynchronous mode gets a signal for each arrival of
 * data (datagrams, stream bytes), whether O_ASYNC was set before the socket was bound or after it
 * already received through the fast path, by fcntl or by ioctl(FIOASYNC); data already queued when
 * the mode is set is not signalled but is still received, in order. */
#include "common.h"

/* wait_sig waits up to ms for sig (blocked) and reports whether it came; with F_SETSIG the
 * kernel fills si_fd and si_code, which are checked against fd. */
static int wait_sig(int sig, int fd, int ms)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	siginfo_t si;
	int r = sigtimedwait(&set, &si, &ts);
	if (r != sig)
		return 0;
	if (sig != SIGIO && (si.si_fd != fd || si.si_code != POLL_IN))
		return out("  si_fd matches %s, si_code POLL_IN %s\n", yesno(si.si_fd == fd),
			   yesno(si.si_code == POLL_IN)), 0;
	return 1;
}

/* drain takes every pending sig (a stream's arrival may signal more than once). */
static void drain(int sig)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&set, NULL, &zero) == sig)
		;
}

static void set_async(int fd, int how, int sig)
{
	if (fcntl(fd, F_SETOWN, getpid()) < 0)
		die("F_SETOWN");
	if (sig != SIGIO && fcntl(fd, F_SETSIG, sig) < 0)
		die("F_SETSIG");
	if (how == 0) {
		E("fcntl F_SETFL O_ASYNC", fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC), 0, 0);
	} else {
		int on = 1;
		E("ioctl FIOASYNC", ioctl(fd, FIOASYNC, &on), 0, 0);
	}
	CHECK("F_GETFL has O_ASYNC", fcntl(fd, F_GETFL) & O_ASYNC);
	V("F_GETOWN is us", fcntl(fd, F_GETOWN) == getpid());
}

static void udp_case(const char *title, int before_bind, int how, int sig)
{
	char buf[64];
	out("-- udp: %s\n", title);
	int r, s = udp_bound(0);
	if (before_bind) {
		r = socket(AF_INET, SOCK_DGRAM, 0);
		if (r < 0)
			die("socket");
		set_async(r, how, sig);
		struct sockaddr_in a = lo_addr(0);
		if (bind(r, (struct sockaddr *)&a, sizeof a) < 0)
			die("bind");
	} else {
		r = udp_bound(0);
		/* Traffic first, so that a fast path is set up between the two sockets. */
		for (int i = 0; i < 3; i++) {
			E("send before", udp_send_to(s, "early", 5, port_of(r)), 5, 0);
			wait_readable(r, 2000);
			E("recv before", recv(r, buf, sizeof buf, 0), 5, 0);
		}
		E("send queued", udp_send_to(s, "queued", 6, port_of(r)), 6, 0);
		wait_readable(r, 2000);
		set_async(r, how, sig);
	}
	CHECK("no signal without new data", !wait_sig(sig, r, 50));
	E("send", udp_send_to(s, "signalled", 9, port_of(r)), 9, 0);
	CHECK("signal for the datagram", wait_sig(sig, r, 2000));
	if (!before_bind) {
		long n = E("recv queued", recv(r, buf, sizeof buf, 0), 6, 0);
		show("data", buf, n);
	}
	long n = E("recv", recv(r, buf, sizeof buf, 0), 9, 0);
	show("data", buf, n);
	E("recv again", recv(r, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	drain(sig);
	E("send again", udp_send_to(s, "again", 5, port_of(r)), 5, 0);
	CHECK("signal for the next datagram", wait_sig(sig, r, 2000));
	n = E("recv", recv(r, buf, sizeof buf, 0), 5, 0);
	show("data", buf, n);
	drain(sig);
	close(r);
	close(s);
}

static void tcp_case(const char *title, int how, int sig)
{
	char buf[64];
	out("-- tcp: %s\n", title);
	int c, s;
	tcp_pair(&c, &s);
	/* Both directions carry data first, so that a fast path is set up. */
	for (int i = 0; i < 3; i++) {
		E("client send", send(c, "ping", 4, 0), 4, 0);
		E("server recv", recv_all(s, buf, 4), 4, 0);
		E("server send", send(s, "pong", 4, 0), 4, 0);
		E("client recv", recv_all(c, buf, 4), 4, 0);
	}
	E("client send queued", send(c, "queued", 6, 0), 6, 0);
	wait_readable(s, 2000);
	set_async(s, how, sig);
	CHECK("no signal without new data", !wait_sig(sig, s, 50));
	E("client send", send(c, "signalled", 9, 0), 9, 0);
	CHECK("signal for the bytes", wait_sig(sig, s, 2000));
	long n = E("server recv all", recv_all(s, buf, 15), 15, 0);
	show("data", buf, n);
	E("server recv again", recv(s, buf, sizeof buf, MSG_DONTWAIT), -1, EAGAIN);
	drain(sig);
	E("client send again", send(c, "again", 5, 0), 5, 0);
	CHECK("signal for the next bytes", wait_sig(sig, s, 2000));
	n = E("server recv", recv_all(s, buf, 5), 5, 0);
	show("data", buf, n);
	E("server send", send(s, "bye", 3, 0), 3, 0);
	n = E("client recv", recv_all(c, buf, 3), 3, 0);
	show("data", buf, n);
	drain(sig);
	close(c);
	CHECK("signal for the end of the stream", wait_sig(sig, s, 2000));
	E("server recv eof", recv(s, buf, sizeof buf, 0), 0, 0);
	close(s);
	drain(sig);
}

int main(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGIO);
	sigaddset(&set, SIGRTMIN + 1);
	sigprocmask(SIG_BLOCK, &set, NULL);

	udp_case("O_ASYNC before bind", 1, 0, SIGIO);
	udp_case("O_ASYNC after traffic", 0, 0, SIGIO);
	udp_case("FIOASYNC after traffic", 0, 1, SIGIO);
	udp_case("F_SETSIG after traffic", 0, 0, SIGRTMIN + 1);
	tcp_case("O_ASYNC after traffic", 0, SIGIO);
	tcp_case("FIOASYNC after traffic", 1, SIGIO);
	tcp_case("F_SETSIG after traffic", 0, SIGRTMIN + 1);
	return finish();
}

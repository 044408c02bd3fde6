/* EPIPE and SIGPIPE: writing to a TCP connection the peer has reset gives EPIPE; MSG_NOSIGNAL
 * suppresses SIGPIPE, plain send/write/sendmsg raise it (a counting handler), SIG_IGN leaves EPIPE;
 * writing after our own shutdown(SHUT_WR) does the same. */
#include "common.h"

static volatile sig_atomic_t pipes;

static void on_pipe(int sig)
{
	(void)sig;
	pipes++;
}

/* reset_pair returns a client whose peer has closed and answered one more segment with RST. */
static int reset_pair(void)
{
	int c, s;
	tcp_pair(&c, &s);
	close(s);
	msleep(20);
	if (send(c, "x", 1, MSG_NOSIGNAL) != 1)
		die("first send after peer close");
	msleep(50);
	return c;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_pipe;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);

	out("-- MSG_NOSIGNAL\n");
	int c = reset_pair();
	E("send nosignal", send(c, "y", 1, MSG_NOSIGNAL), -1, EPIPE);
	E("send nosignal again", send(c, "y", 1, MSG_NOSIGNAL), -1, EPIPE);
	out("sigpipe count = %d\n", (int)pipes);
	close(c);

	out("-- without MSG_NOSIGNAL\n");
	c = reset_pair();
	E("send", send(c, "y", 1, 0), -1, EPIPE);
	out("sigpipe count = %d\n", (int)pipes);
	E("write", write(c, "y", 1), -1, EPIPE);
	out("sigpipe count = %d\n", (int)pipes);
	struct iovec iov = { "z", 1 };
	struct msghdr m;
	memset(&m, 0, sizeof m);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	E("sendmsg", sendmsg(c, &m, 0), -1, EPIPE);
	out("sigpipe count = %d\n", (int)pipes);
	E("sendmsg nosignal", sendmsg(c, &m, MSG_NOSIGNAL), -1, EPIPE);
	out("sigpipe count = %d\n", (int)pipes);
	close(c);

	out("-- SIG_IGN\n");
	signal(SIGPIPE, SIG_IGN);
	c = reset_pair();
	E("send ignored", send(c, "y", 1, 0), -1, EPIPE);
	out("sigpipe count = %d\n", (int)pipes);
	close(c);
	sigaction(SIGPIPE, &sa, NULL);

	out("-- after own shutdown(SHUT_WR)\n");
	int s;
	tcp_pair(&c, &s);
	E("shutdown wr", shutdown(c, SHUT_WR), 0, 0);
	E("send", send(c, "y", 1, 0), -1, EPIPE);
	out("sigpipe count = %d\n", (int)pipes);
	E("send nosignal", send(c, "y", 1, MSG_NOSIGNAL), -1, EPIPE);
	out("sigpipe count = %d\n", (int)pipes);
	E("peer can still send", send(s, "back", 4, 0), 4, 0);
	char buf[8];
	E("recv", recv(c, buf, sizeof buf, 0), 4, 0);
	close(c);
	close(s);

	out("-- blocked SIGPIPE stays pending\n");
	sigset_t set, pend;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &set, NULL);
	c = reset_pair();
	E("send blocked-signal", send(c, "y", 1, 0), -1, EPIPE);
	sigpending(&pend);
	out("SIGPIPE pending = %s\n", yesno(sigismember(&pend, SIGPIPE)));
	out("sigpipe count = %d\n", (int)pipes);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	out("sigpipe count after unblock = %d\n", (int)pipes);
	close(c);
	return finish();
}

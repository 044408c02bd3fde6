/* Signals that land while a datagram is already queued: a blocking receive, poll and epoll_wait
 * return the datagram (or its readiness) and never fail with EINTR, as the kernel's calls look at
 * their queue before they give up to a signal. A thread storms the process with SIGUSR1 (a handler
 * without SA_RESTART, then one with SA_RESTART on a socket with SO_RCVTIMEO: both make a blocked
 * receive fail with EINTR). The datagrams come from a process of our own without the library (this
 * program exec'd again without LD_PRELOAD), each one sent before we are told to receive it, so
 * they wait in the receiving socket's kernel queue. */
#include "common.h"
#include <sys/epoll.h>
#include <sys/wait.h>

#define ROUNDS 300

static volatile sig_atomic_t storming = 1, handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

static void *storm(void *arg)
{
	(void)arg;
	while (storming) {
		kill(getpid(), SIGUSR1);
		usleep(20);
	}
	return NULL;
}

/* sender: the port comes first on stdin (a line), then one datagram to it for each byte read, each
 * followed by a byte on stdout. */
static int sender(void)
{
	char line[16];
	int k = 0;
	while (k < (int)sizeof line - 1 && read(0, &line[k], 1) == 1 && line[k] != '\n')
		k++;
	line[k] = 0;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = lo_addr(atoi(line));
	char c;
	while (read(0, &c, 1) == 1) {
		if (sendto(s, "queued", 6, 0, (struct sockaddr *)&a, sizeof a) != 6 || write(1, &c, 1) != 1)
			return 1;
	}
	return 0;
}

static int to_sender, from_sender;

/* next has the sender queue one datagram and waits until it is sent. */
static void next(void)
{
	char c = 'n';
	ssize_t n;
	while ((n = write(to_sender, &c, 1)) < 0 && errno == EINTR)
		;
	if (n == 1)
		while ((n = read(from_sender, &c, 1)) < 0 && errno == EINTR)
			;
	if (n != 1)
		die("sender gone");
}

/* recv_rounds receives ROUNDS queued datagrams on s and prints how many receives failed with EINTR
 * and how many returned anything else than the datagram. */
static void recv_rounds(int s, const char *label)
{
	char b[16];
	int eintr = 0, wrong = 0;
	for (int i = 0; i < ROUNDS; i++) {
		next();
		ssize_t n = recv(s, b, sizeof b, 0);
		eintr += n < 0 && errno == EINTR;
		wrong += n != 6 && !(n < 0 && errno == EINTR);
		if (n < 0)
			recv(s, b, sizeof b, MSG_DONTWAIT);
	}
	out("%s: EINTR %d of %d, wrong %d\n", label, eintr, ROUNDS, wrong);
}

static void handler(int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = flags;
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		die("sigaction");
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "send") == 0)
		return sender();

	int down[2], up[2];
	if (pipe(down) < 0 || pipe(up) < 0)
		die("pipe");
	pid_t pid = fork();
	if (pid == 0) {
		dup2(down[0], 0);
		dup2(up[1], 1);
		close(down[0]);
		close(down[1]); /* else its stdin never ends */
		close(up[0]);
		close(up[1]);
		unsetenv("LD_PRELOAD");
		execl("/proc/self/exe", argv[0], "send", (char *)NULL);
		_exit(127);
	}
	close(down[0]);
	close(up[1]);
	to_sender = down[1];
	from_sender = up[0];
	/* the socket is made after the fork: the sender does not share it */
	int s = udp_bound(0);
	char line[16];
	int ll = snprintf(line, sizeof line, "%d\n", port_of(s));
	if (write(to_sender, line, (size_t)ll) != ll)
		die("write port");

	char b[16];
	recv(s, b, sizeof b, MSG_DONTWAIT); /* a data call: the library serves the socket from now on */
	handler(0);
	pthread_t t;
	pthread_create(&t, NULL, storm, NULL);

	recv_rounds(s, "recv, handler without SA_RESTART");

	handler(SA_RESTART);
	struct timeval tv = { 10, 0 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	recv_rounds(s, "recv, SA_RESTART with SO_RCVTIMEO");

	int eintr = 0, wrong = 0;
	for (int i = 0; i < ROUNDS; i++) {
		next();
		struct pollfd p = { .fd = s, .events = POLLIN };
		int n = poll(&p, 1, 10000);
		eintr += n < 0 && errno == EINTR;
		wrong += n >= 0 && (n != 1 || !(p.revents & POLLIN));
		recv(s, b, sizeof b, MSG_DONTWAIT);
	}
	out("poll: EINTR %d of %d, wrong %d\n", eintr, ROUNDS, wrong);

	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s };
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	eintr = wrong = 0;
	for (int i = 0; i < ROUNDS; i++) {
		next();
		int n = epoll_wait(ep, &ev, 1, 10000);
		eintr += n < 0 && errno == EINTR;
		wrong += n >= 0 && (n != 1 || !(ev.events & EPOLLIN));
		recv(s, b, sizeof b, MSG_DONTWAIT);
	}
	out("epoll_wait: EINTR %d of %d, wrong %d\n", eintr, ROUNDS, wrong);

	storming = 0;
	pthread_join(t, NULL);
	close(to_sender);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK("sender exited 0", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK("signals handled", handled > 0);
	return finish();
}

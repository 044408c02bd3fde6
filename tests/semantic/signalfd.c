/* A program that blocks SIGTERM, SIGUSR1 and SIGUSR2 and takes them through signalfd and sigwaitinfo
 * must receive them, never be killed by them: sent by itself, by a child process, while a thread
 * runs, while it polls a socket and the signalfd together. */
#include "common.h"
#include <sys/signalfd.h>

static void *idle_thread(void *arg)
{
	(void)arg;
	msleep(300);
	return NULL;
}

static void read_sig(int sfd, const char *label)
{
	struct signalfd_siginfo si;
	ssize_t n = read(sfd, &si, sizeof si);
	if (n != sizeof si) {
		out("%s: read = %ld %s\n", label, (long)n, ename(errno));
		g_fail++;
		return;
	}
	out("%s: signal %s\n", label, sigabbrev_np((int)si.ssi_signo));
}

int main(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	E("sigprocmask block", sigprocmask(SIG_BLOCK, &set, NULL), 0, 0);
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	sigset_t fdset = set;
	sigdelset(&fdset, SIGUSR2);
	int sfd = (int)OK("signalfd", signalfd(-1, &fdset, SFD_CLOEXEC));

	E("kill self SIGTERM", kill(getpid(), SIGTERM), 0, 0);
	msleep(50);
	read_sig(sfd, "self");

	pthread_t th;
	pthread_create(&th, NULL, idle_thread, NULL);
	E("kill self SIGUSR1 with a thread running", kill(getpid(), SIGUSR1), 0, 0);
	msleep(50);
	read_sig(sfd, "with thread");
	pthread_join(th, NULL);

	out("-- from a child, while polling a socket and the signalfd\n");
	int u = udp_bound(0);
	fflush(stdout);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		msleep(100);
		kill(parent, SIGTERM);
		msleep(100);
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		udp_send_to(s, "x", 1, port_of(u));
		_exit(0);
	}
	struct pollfd p[2] = { { sfd, POLLIN, 0 }, { u, POLLIN, 0 } };
	E("poll", poll(p, 2, 5000), 1, 0);
	out("signalfd %s socket %s\n", pollbits(p[0].revents), pollbits(p[1].revents));
	read_sig(sfd, "from child");
	p[0].revents = p[1].revents = 0;
	E("poll", poll(p, 2, 5000), 1, 0);
	out("signalfd %s socket %s\n", pollbits(p[0].revents), pollbits(p[1].revents));
	char b;
	E("recv", recv(u, &b, 1, 0), 1, 0);
	waitpid(pid, NULL, 0);

	out("-- sigwaitinfo\n");
	pid = fork();
	if (pid == 0) {
		msleep(100);
		kill(parent, SIGUSR2);
		_exit(0);
	}
	siginfo_t si;
	struct timespec ts = { 5, 0 };
	int sig = sigtimedwait(&usr2, &si, &ts);
	out("sigtimedwait = %s from child = %s\n", sig > 0 ? sigabbrev_np(sig) : ename(errno), yesno(si.si_pid == pid));
	waitpid(pid, NULL, 0);

	out("-- a burst of signals\n");
	for (int i = 0; i < 20; i++)
		kill(getpid(), i % 2 ? SIGUSR1 : SIGTERM);
	msleep(50);
	read_sig(sfd, "burst 1");
	read_sig(sfd, "burst 2");
	fcntl(sfd, F_SETFL, O_NONBLOCK);
	struct signalfd_siginfo sx;
	E("no more pending (standard signals coalesce)", read(sfd, &sx, sizeof sx), -1, EAGAIN);
	sigset_t pend;
	sigpending(&pend);
	out("still pending: TERM %s USR1 %s USR2 %s\n", yesno(sigismember(&pend, SIGTERM)),
	    yesno(sigismember(&pend, SIGUSR1)), yesno(sigismember(&pend, SIGUSR2)));
	close(sfd);
	close(u);
	return finish();
}

/* 1500+ sockets at once (RLIMIT_NOFILE raised): 1600 UDP sockets and 100 TCP connections, traffic on
 * every one, poll and epoll over all of them, fds far above 1024. In a network namespace of its
 * own where it may make one (root): 1700 ports of 127.0.0.1 taken at once would catch the
 * datagrams that programs running beside it send to ports they just closed. */
#include "common.h"
#include <net/if.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

/* own_loopback moves the process into a new network namespace with its lo up; without privilege
 * it stays where it is (silently: the transcript is the same). */
static void own_loopback(void)
{
	if (unshare(CLONE_NEWNET) != 0)
		return;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) != 0)
		die("lo flags");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0)
		die("lo up");
	close(s);
}

#define NU 1600
#define NT 100

int main(void)
{
	own_loopback();
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rlim_t want = 4096;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
		/* Raising the hard limit needs privilege; without it take what the hard limit allows. */
		struct rlimit up = { want, want };
		if (setrlimit(RLIMIT_NOFILE, &up) != 0)
			want = rl.rlim_max;
		else
			rl.rlim_max = want;
	}
	rl.rlim_cur = want;
	E("setrlimit NOFILE", setrlimit(RLIMIT_NOFILE, &rl), 0, 0);
	CHECK("limit allows 2000 fds", want >= 2000);

	static int u[NU], tc[NT], ts[NT];
	int maxfd = 0;
	for (int i = 0; i < NU; i++) {
		u[i] = udp_bound(0);
		if (u[i] > maxfd)
			maxfd = u[i];
	}
	int l = tcp_listener(0);
	for (int i = 0; i < NT; i++) {
		tc[i] = tcp_connect_port(port_of(l));
		ts[i] = accept(l, NULL, NULL);
		if (ts[i] < 0)
			die("accept");
		if (ts[i] > maxfd)
			maxfd = ts[i];
	}
	out("sockets open = %d\n", NU + 2 * NT + 1);
	CHECK("highest fd above 1700", maxfd > 1700);

	int s = udp_bound(0);
	int sent = 0;
	for (int i = 0; i < NU; i++) {
		char m[16];
		int n = snprintf(m, sizeof m, "u%d", i);
		if (udp_send_to(s, m, (size_t)n, port_of(u[i])) == n)
			sent++;
	}
	out("udp datagrams sent = %d\n", sent);
	for (int i = 0; i < NT; i++) {
		char m[16];
		int n = snprintf(m, sizeof m, "t%d", i);
		send(tc[i], m, (size_t)n, 0);
	}
	msleep(50);

	static struct pollfd p[NU + NT];
	for (int i = 0; i < NU; i++)
		p[i] = (struct pollfd){ u[i], POLLIN, 0 };
	for (int i = 0; i < NT; i++)
		p[NU + i] = (struct pollfd){ ts[i], POLLIN, 0 };
	E("poll over all", poll(p, NU + NT, 2000), NU + NT, 0);

	int ep = epoll_create1(0);
	int added = 0;
	for (int i = 0; i < NU + NT; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, p[i].fd, &ev) == 0)
			added++;
	}
	out("epoll registrations = %d\n", added);
	static struct epoll_event evs[NU + NT];
	E("epoll_wait over all", epoll_wait(ep, evs, NU + NT, 2000), NU + NT, 0);

	int good = 0;
	for (int i = 0; i < NU; i++) {
		char m[16], want[16];
		int n = snprintf(want, sizeof want, "u%d", i);
		long k = recv(u[i], m, sizeof m, MSG_DONTWAIT);
		if (k == n && memcmp(m, want, (size_t)n) == 0)
			good++;
	}
	for (int i = 0; i < NT; i++) {
		char m[16], want[16];
		int n = snprintf(want, sizeof want, "t%d", i);
		long k = recv(ts[i], m, sizeof m, MSG_DONTWAIT);
		if (k == n && memcmp(m, want, (size_t)n) == 0)
			good++;
	}
	out("messages received intact = %d\n", good);
	E("epoll_wait after draining", epoll_wait(ep, evs, NU + NT, 0), 0, 0);

	int closed = 0;
	for (int i = 0; i < NU; i++)
		closed += close(u[i]) == 0;
	for (int i = 0; i < NT; i++)
		closed += (close(tc[i]) == 0) + (close(ts[i]) == 0);
	out("closed = %d\n", closed);
	int again = udp_bound(0);
	E("send after mass close", udp_send_to(s, "z", 1, port_of(again)), 1, 0);
	wait_readable(again, 1000);
	E("recv after mass close", recv(again, p, 16, 0), 1, 0);
	return finish();
}

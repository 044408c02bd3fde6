/* Listeners of a process without its engine (shim/preload/lazy_listen.c): makes five listening
 * sockets (A: 127.0.0.1, B: [::] IPV6_V6ONLY, C: [::] dual-stack, D: [::1], E: 0.0.0.0 listened
 * twice), prints "ready PID PORT_A .. PORT_E", then follows commands read from stdin, one per
 * line, answering "ok" to each: "close A" closes A, "dup2 B" puts /dev/null over B, "load" sends a
 * datagram to a port nobody has from a UDP socket bound to 127.0.0.1:0 and then receives on it
 * (the receive loads the engine; the send alone would not, nor would the receive of a socket
 * that was not bound: shim/preload/lazy_ksend.c), "reuse A" closes A and waits (poll, no timeout) on
 * a UDP socket that gets A's number (a wait on a UDP socket loads the engine: nothing noted of the
 * listener that had the number may stay), "fork" forks a child that closes every listener and
 * calls exit (the entries stay: they are the parent's), "exit" returns from main. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int listener(int family, const char *addr, int v6only, int port_out[1]) {
	int s = socket(family, SOCK_STREAM, 0);
	if (s < 0)
		exit(10);
	struct sockaddr_storage ss = {0};
	socklen_t len;
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		inet_pton(AF_INET, addr, &a->sin_addr);
		len = sizeof *a;
	} else {
		if (setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) < 0)
			exit(11);
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		inet_pton(AF_INET6, addr, &a->sin6_addr);
		len = sizeof *a;
	}
	if (bind(s, (struct sockaddr *)&ss, len) < 0 || listen(s, 16) < 0)
		exit(12);
	len = sizeof ss;
	if (getsockname(s, (struct sockaddr *)&ss, &len) < 0)
		exit(13);
	*port_out = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return s;
}

int main(void) {
	int port[5], fd[5];
	fd[0] = listener(AF_INET, "127.0.0.1", 0, &port[0]);
	fd[1] = listener(AF_INET6, "::", 1, &port[1]);
	fd[2] = listener(AF_INET6, "::", 0, &port[2]);
	fd[3] = listener(AF_INET6, "::1", 1, &port[3]);
	fd[4] = listener(AF_INET, "0.0.0.0", 0, &port[4]);
	if (listen(fd[4], 64) < 0)
		return 14;
	printf("ready %d %d %d %d %d %d\n", (int)getpid(), port[0], port[1], port[2], port[3], port[4]);
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof line, stdin) != NULL) {
		if (strcmp(line, "close A\n") == 0) {
			if (close(fd[0]) < 0)
				return 20;
		} else if (strcmp(line, "dup2 B\n") == 0) {
			int n = open("/dev/null", O_RDONLY);
			if (n < 0 || dup2(n, fd[1]) < 0)
				return 21;
			close(n);
		} else if (strcmp(line, "load\n") == 0) {
			int u = socket(AF_INET, SOCK_DGRAM, 0);
			struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
			struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
			char c;
			if (u < 0 || bind(u, (struct sockaddr *)&b, sizeof b) != 0 ||
			    sendto(u, "x", 1, 0, (struct sockaddr *)&a, sizeof a) != 1 ||
			    recv(u, &c, 1, MSG_DONTWAIT) != -1 || errno != EAGAIN)
				return 22;
			close(u);
		} else if (strcmp(line, "reuse A\n") == 0) {
			if (close(fd[0]) < 0)
				return 24;
			int u = socket(AF_INET, SOCK_DGRAM, 0);
			if (u != fd[0])
				return 25;
			struct pollfd p = {.fd = u, .events = POLLIN};
			if (poll(&p, 1, 0) != 0)
				return 26;
		} else if (strcmp(line, "fork\n") == 0) {
			fflush(stdout);
			pid_t c = fork();
			if (c < 0)
				return 27;
			if (c == 0) {
				for (int i = 0; i < 5; i++)
					close(fd[i]);
				exit(0);
			}
			int st;
			if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
				return 28;
		} else if (strcmp(line, "exit\n") == 0) {
			printf("ok\n");
			fflush(stdout);
			return 0;
		} else {
			return 23;
		}
		printf("ok\n");
		fflush(stdout);
	}
	return 0;
}

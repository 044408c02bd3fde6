/* Name resolution through libc keeps working: getaddrinfo("localhost"), numeric hosts and services,
 * AI_PASSIVE, getnameinfo, gethostbyname, and a connection to an address found that way. */
#include "common.h"
#include <netdb.h>

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void gai(const char *host, const char *serv, int family, int socktype, int flags)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = family;
	hints.ai_socktype = socktype;
	hints.ai_flags = flags;
	int rc = getaddrinfo(host, serv, &hints, &res);
	out("getaddrinfo(%s, %s, family %d, socktype %d, flags 0x%x) = %s\n", host ? host : "NULL", serv ? serv : "NULL",
	    family, socktype, flags, rc == 0 ? "0" : gai_strerror(rc));
	if (rc != 0)
		return;
	char *lines[64];
	int n = 0;
	for (struct addrinfo *ai = res; ai && n < 64; ai = ai->ai_next) {
		char host_s[NI_MAXHOST], serv_s[NI_MAXSERV], line[1400];
		getnameinfo(ai->ai_addr, ai->ai_addrlen, host_s, sizeof host_s, serv_s, sizeof serv_s,
			    NI_NUMERICHOST | NI_NUMERICSERV);
		snprintf(line, sizeof line, "  family %d socktype %d protocol %d addr %s port %s", ai->ai_family,
			 ai->ai_socktype, ai->ai_protocol, host_s, serv_s);
		lines[n++] = strdup(line);
	}
	qsort(lines, (size_t)n, sizeof lines[0], cmp);
	for (int i = 0; i < n; i++) {
		out("%s\n", lines[i]);
		free(lines[i]);
	}
	freeaddrinfo(res);
}

int main(void)
{
	gai("localhost", "80", AF_INET, SOCK_STREAM, 0);
	gai("localhost", "domain", AF_INET, 0, 0);
	gai("localhost", "80", AF_UNSPEC, SOCK_STREAM, AI_ADDRCONFIG);
	gai("127.0.0.1", "8080", AF_UNSPEC, SOCK_DGRAM, AI_NUMERICHOST | AI_NUMERICSERV);
	gai(NULL, "9999", AF_INET, SOCK_STREAM, AI_PASSIVE);
	gai("not a host name", "80", AF_INET, SOCK_STREAM, AI_NUMERICHOST);
	gai("localhost", "no-such-service-name", AF_INET, SOCK_STREAM, 0);

	struct sockaddr_in a = lo_addr(80);
	char h[NI_MAXHOST], sv[NI_MAXSERV];
	int rc = getnameinfo((struct sockaddr *)&a, sizeof a, h, sizeof h, sv, sizeof sv, NI_NUMERICSERV);
	out("getnameinfo(127.0.0.1:80) = %d host %s serv %s\n", rc, h, sv);
	struct hostent *he = gethostbyname("localhost");
	out("gethostbyname(localhost) = %s\n", he ? inet_ntoa(*(struct in_addr *)he->h_addr_list[0]) : "NULL");

	out("-- connect to a resolved address\n");
	int l = tcp_listener(0);
	char port[16];
	snprintf(port, sizeof port, "%d", port_of(l));
	struct addrinfo hints, *res;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	E("getaddrinfo", getaddrinfo("localhost", port, &hints, &res), 0, 0);
	int c = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
	E("connect", connect(c, res->ai_addr, res->ai_addrlen), 0, 0);
	freeaddrinfo(res);
	int s = accept(l, NULL, NULL);
	E("send", send(c, "resolved", 8, 0), 8, 0);
	char buf[16];
	E("recv", recv_all(s, buf, 8), 8, 0);
	close(c);
	close(s);
	close(l);
	return finish();
}

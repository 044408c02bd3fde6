/*
 * rules.c: add_conf_rule and dump_fd_stats as a program written against goxio_extra.h uses them.
 *
 * With the API ("full"): a UDP receiver made before any rule is offloaded; after
 * add_conf_rule("use os udp_receiver *:*") the next one stays with the kernel (the EINVAL probes
 * say so) while the first keeps its transport; a later "use vma" rule, first in the list, offloads
 * the one after. A line that is not a rule is refused with EINVAL. dump_fd_stats logs the first
 * socket (stderr says "dump fd N" for the test to find the log line) and refuses an unknown level.
 * stdout, the data, is the same without the API.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../shim/goxio_extra.h"

#include "check.h"

static struct vma_api_t *api;
static int use;

/* receiver makes a UDP receiver on loopback and moves one datagram through it. */
static int receiver(const char *name) {
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &al) == 0, "bind");
	char buf[64];
	size_t n = strlen(name);
	CHECK(sendto(s, name, n, 0, (struct sockaddr *)&a, sizeof a) == (ssize_t)n, "sendto");
	CHECK(recv(s, buf, sizeof buf, 0) == (ssize_t)n && memcmp(buf, name, n) == 0, "recv");
	printf("%s: datagram ok\n", name);
	return s;
}

static int offloaded(int fd) {
	errno = 0;
	int r = api->get_socket_rings_num(fd);
	CHECK(r >= 0 || errno == EINVAL, "get_socket_rings_num");
	return r >= 0;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "none";
	setvbuf(stdout, NULL, _IOLBF, 0);
	api = goxio_get_api();
	uint64_t bits = VMA_EXTRA_API_ADD_CONF_RULE | VMA_EXTRA_API_DUMP_FD_STATS | VMA_EXTRA_API_GET_SOCKET_RINGS_NUM;
	use = api != NULL && (api->vma_extra_supported_mask & bits) == bits;
	CHECK(use == (strcmp(mode, "full") == 0), "rules offered: %d in mode %s", use, mode);

	int a = receiver("first");
	if (use) {
		CHECK(offloaded(a), "the first receiver is not offloaded");
		CHECK(api->add_conf_rule("use os udp_receiver *:*") == 0, "add_conf_rule os");
		errno = 0;
		CHECK(api->add_conf_rule("this is no rule") == -1 && errno == EINVAL, "a bad line");
		errno = 0;
		CHECK(api->add_conf_rule("application-id foo *") == -1 && errno == EINVAL, "a line without a rule");
	}
	int b = receiver("second");
	if (use) {
		CHECK(!offloaded(b), "the second receiver is offloaded despite the rule");
		CHECK(offloaded(a), "the first receiver lost its transport");
		CHECK(api->add_conf_rule("use vma udp_receiver 127.0.0.1:*") == 0, "add_conf_rule vma");
	}
	int c = receiver("third");
	if (use) {
		CHECK(offloaded(c), "the third receiver is not offloaded: the newest rule is not first");
		fprintf(stderr, "dump fd %d\n", a);
		CHECK(api->dump_fd_stats(a, 3) == 0, "dump_fd_stats");
		errno = 0;
		CHECK(api->dump_fd_stats(a, 42) == -1 && errno == EINVAL, "dump_fd_stats at an unknown level");
	}
	close(a);
	close(b);
	close(c);
	printf("done\n");
	return 0;
}

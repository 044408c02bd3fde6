/*
 * thread.c: thread_offload as a program written against goxio_extra.h uses it.
 *
 * Threads make UDP sockets and move a datagram through each; with the API ("full") the main
 * thread first names one worker with thread_offload(0, tid): its socket must stay with the kernel
 * (get_socket_rings_num and register_recv_callback refuse it with EINVAL, VMA's "is it offloaded?"
 * probe) while the other worker's is served; thread_offload(1, tid) then gives the first worker
 * offloaded sockets again. stdout, the data, is the same with and without the library.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../shim/goxio_extra.h"

#include "check.h"

static struct vma_api_t *api;
static int use;

struct job {
	pthread_barrier_t *go;
	int round, worker, want_offloaded;
	char line[128];
};

static vma_recv_callback_retval_t keep(int fd, size_t n, struct iovec *iov, struct vma_info_t *info, void *ctx) {
	return VMA_PACKET_RECV;
}

/* offloaded asks the API whether the library serves fd. */
static int offloaded(int fd) {
	errno = 0;
	int r = api->get_socket_rings_num(fd);
	if (r < 0) {
		CHECK(errno == EINVAL, "get_socket_rings_num");
		CHECK(api->register_recv_callback(fd, keep, NULL) == -1 && errno == EINVAL, "the two probes disagree");
		return 0;
	}
	CHECK(api->register_recv_callback(fd, keep, NULL) == 0 && api->register_recv_callback(fd, NULL, NULL) == 0,
	      "the two probes disagree");
	return 1;
}

static void *worker(void *arg) {
	struct job *j = arg;
	pthread_barrier_wait(j->go); /* the main thread has made its thread_offload calls */
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &al) == 0, "bind");
	char msg[32], buf[32];
	int n = snprintf(msg, sizeof msg, "round %d worker %d", j->round, j->worker);
	CHECK(sendto(s, msg, (size_t)n, 0, (struct sockaddr *)&a, sizeof a) == n, "sendto");
	CHECK(recv(s, buf, sizeof buf, 0) == n && memcmp(buf, msg, (size_t)n) == 0, "recv");
	if (use)
		CHECK(offloaded(s) == j->want_offloaded, "round %d worker %d: offloaded %d, want %d", j->round, j->worker,
		      !j->want_offloaded, j->want_offloaded);
	snprintf(j->line, sizeof j->line, "%.*s: ok", n, msg);
	close(s);
	return NULL;
}

int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "none";
	setvbuf(stdout, NULL, _IOLBF, 0);
	api = goxio_get_api();
	uint64_t bits = VMA_EXTRA_API_THREAD_OFFLOAD | VMA_EXTRA_API_GET_SOCKET_RINGS_NUM | VMA_EXTRA_API_REGISTER_RECV_CALLBACK;
	use = api != NULL && (api->vma_extra_supported_mask & bits) == bits;
	CHECK(use == (strcmp(mode, "full") == 0), "thread_offload offered: %d in mode %s", use, mode);
	for (int round = 0; round < 2; round++) {
		pthread_barrier_t go;
		pthread_barrier_init(&go, NULL, 3);
		struct job jobs[2];
		pthread_t t[2];
		for (int w = 0; w < 2; w++) {
			jobs[w] = (struct job){.go = &go, .round = round, .worker = w, .want_offloaded = !(round == 0 && w == 0)};
			CHECK(pthread_create(&t[w], NULL, worker, &jobs[w]) == 0, "pthread_create");
		}
		if (use)
			CHECK(api->thread_offload(round == 0 ? 0 : 1, t[0]) == 0, "thread_offload");
		pthread_barrier_wait(&go);
		for (int w = 0; w < 2; w++) {
			pthread_join(t[w], NULL);
			printf("%s\n", jobs[w].line);
		}
		pthread_barrier_destroy(&go);
	}
	printf("done\n");
	return 0;
}

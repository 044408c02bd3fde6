/* lineping: the machine's floor for handing data from one CPU to another, which every
 * shared-memory ping-pong pays on each hop: one thread on CPU 0 and one on CPU 1 pass a cache
 * line back and forth (each waits for the other's store, then stores).
 *
 *   lineping ROUNDS
 *
 * Prints "one_way_ns=<median> min_ns=<...> max_ns=<...> batches=<b> rounds=<ROUNDS>" over the
 * batches of ROUNDS round trips each, or "one_way_ns=n/a" with fewer than 2 CPUs allowed. Each
 * batch is bounded: a peer that cannot run (its CPU taken) ends the measure after 2 s with n/a. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCHES 5
#define LIMIT_NS 2000000000.0

static _Alignas(64) volatile uint64_t ping;
static _Alignas(64) volatile uint64_t pong;
static volatile int give_up;
static long rounds;

static double now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int pin(int cpu) {
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *peer(void *arg) {
	(void)arg;
	if (pin(1) != 0)
		return NULL;
	for (uint64_t i = 1; i <= (uint64_t)rounds * BATCHES; i++) {
		while (ping != i)
			if (give_up)
				return NULL;
		pong = i;
	}
	return NULL;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
	rounds = argc == 2 ? atol(argv[1]) : 0;
	if (rounds < 1) {
		fprintf(stderr, "usage: lineping ROUNDS\n");
		return 2;
	}
	cpu_set_t s;
	if (sched_getaffinity(0, sizeof s, &s) != 0 || !CPU_ISSET(0, &s) || !CPU_ISSET(1, &s) || pin(0) != 0) {
		printf("one_way_ns=n/a\n");
		return 0;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, peer, NULL) != 0) {
		perror("lineping: pthread_create");
		return 1;
	}
	double ns[BATCHES];
	uint64_t i = 0;
	for (int b = 0; b < BATCHES; b++) {
		double start = now_ns();
		for (long r = 0; r < rounds; r++) {
			ping = ++i;
			for (long spins = 0; pong != i; spins++)
				if ((spins & 0xfffff) == 0xfffff && now_ns() - start > LIMIT_NS) {
					give_up = 1;
					pthread_join(t, NULL);
					printf("one_way_ns=n/a\n");
					return 0;
				}
		}
		ns[b] = (now_ns() - start) / (2.0 * rounds);
	}
	pthread_join(t, NULL);
	qsort(ns, BATCHES, sizeof ns[0], cmp);
	printf("one_way_ns=%.0f min_ns=%.0f max_ns=%.0f batches=%d rounds=%ld\n", ns[BATCHES / 2], ns[0], ns[BATCHES - 1],
	       BATCHES, rounds);
	return 0;
}

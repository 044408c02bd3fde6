/* execab: the time of one fork + exec + wait of a program under several LD_PRELOAD values,
 * interleaved exec by exec, so that a drift of the machine falls on every variant alike.
 *
 *   execab ROUNDS PRELOAD... -- PROGRAM [ARG...]
 *
 * PRELOAD "-" is none. The program's output goes to /dev/null. Prints one line per variant:
 * "variant=<index> runs=<n> p50_us=<median> p25_us=<...> p75_us=<...>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
	if (argc < 5) {
		fprintf(stderr, "usage: execab ROUNDS PRELOAD... -- PROGRAM [ARG...]\n");
		return 2;
	}
	int rounds = atoi(argv[1]), prog = 0;
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			prog = i + 1;
			break;
		}
	int nv = prog - 3;
	if (rounds < 1 || nv < 1 || prog == 0 || prog >= argc) {
		fprintf(stderr, "execab: bad arguments\n");
		return 2;
	}
	double *t = calloc((size_t)rounds * nv, sizeof(double));
	if (!t)
		return 1;
	for (int r = 0; r < rounds; r++)
		for (int v = 0; v < nv; v++) {
			const char *pre = argv[2 + v];
			double a = now_us();
			pid_t p = fork();
			if (p == 0) {
				int fd = open("/dev/null", O_WRONLY);
				dup2(fd, 1);
				dup2(fd, 2);
				if (strcmp(pre, "-") == 0)
					unsetenv("LD_PRELOAD");
				else
					setenv("LD_PRELOAD", pre, 1);
				execv(argv[prog], argv + prog);
				_exit(127);
			}
			int st;
			if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "execab: %s failed under variant %d\n", argv[prog], v);
				return 1;
			}
			t[(size_t)v * rounds + r] = now_us() - a;
		}
	for (int v = 0; v < nv; v++) {
		double *x = t + (size_t)v * rounds;
		qsort(x, rounds, sizeof(double), cmp);
		printf("variant=%d runs=%d p50_us=%.1f p25_us=%.1f p75_us=%.1f\n", v, rounds, x[rounds / 2], x[rounds / 4],
		       x[(3 * rounds) / 4]);
	}
	return 0;
}

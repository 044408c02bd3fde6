/* progs.h: what the test programs of tests/shm that count goxio's engine calls share: the
 * calling thread's calls into the engine (goxio_thread_engine_calls of libgoxio.so, looked up
 * by progs_init; -1 without the library), whether the engine is mapped, a fatal error printed as
 * "error WHAT: REASON" with exit status 1, and 127.0.0.1:PORT. */
#ifndef GOXIO_TESTS_SHM_PROGS_H
#define GOXIO_TESTS_SHM_PROGS_H

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static unsigned long (*engine_calls)(void);

static void progs_init(void) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	engine_calls = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "goxio_thread_engine_calls");
}

static long calls(void) { return engine_calls ? (long)engine_calls() : -1; }

static void die(const char *what) {
	printf("error %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct sockaddr_in lo(int port) {
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* engine_loaded reports whether libgoxio-engine.so is mapped in this process. */
static int engine_loaded(void) {
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	if (f == NULL)
		die("maps");
	while (!found && fgets(line, sizeof line, f) != NULL)
		found = strstr(line, "libgoxio-engine.so") != NULL;
	fclose(f);
	return found;
}

#endif

/* check.h: the test programs' one assertion: on failure, the place, the message and errno, then
 * exit 1. */
#ifndef VMAAPI_CHECK_H
#define VMAAPI_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                                                   \
	do {                                                                                               \
		if (!(cond)) {                                                                             \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
			fprintf(stderr, __VA_ARGS__);                                                      \
			fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno));                        \
			exit(1);                                                                           \
		}                                                                                          \
	} while (0)

#endif

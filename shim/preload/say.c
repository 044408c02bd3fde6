/*
 * say.c: messages built without allocating (a vfork child, a signal handler or the loader's lock
 * may be where they are said).
 */
#include "preload.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

size_t goxio_join(char *buf, size_t cap, const char *const parts[], size_t n) {
	size_t len = 0;
	if (cap == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(parts[i]);
		if (len + l >= cap)
			l = cap - len - 1;
		memcpy(buf + len, parts[i], l);
		len += l;
	}
	buf[len] = 0;
	return len;
}

void goxio_say_parts(const char *const parts[], size_t n) {
	char buf[PATH_MAX + 256];
	size_t len = goxio_join(buf, sizeof buf, parts, n);
	ssize_t r = REAL(write)(2, buf, len);
	(void)r;
}

/*
 * fakepreload: a stand-in preload library used only to test the benchmark's
 * plumbing before libgoxio.so exists (run.sh with GOXIO_LIB=fake). It
 * interposes the calls the benchmark loops over and forwards them to libc
 * after a C-side table check, like a passthrough trampoline, and never
 * accelerates anything.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/socket.h>

#define TABLE 65536
static unsigned char offloaded[TABLE];

static int (*real_fcntl)(int, int, ...);
static int (*real_getsockopt)(int, int, int, void *, socklen_t *);

__attribute__((constructor)) static void init(void)
{
	real_fcntl = (int (*)(int, int, ...))dlsym(RTLD_NEXT, "fcntl");
	real_getsockopt = (int (*)(int, int, int, void *, socklen_t *))dlsym(RTLD_NEXT, "getsockopt");
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	long arg = va_arg(ap, long);
	va_end(ap);
	if ((unsigned)fd < TABLE && offloaded[fd])
		return -1;
	return real_fcntl(fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	if ((unsigned)fd < TABLE && offloaded[fd])
		return -1;
	return real_getsockopt(fd, level, name, val, len);
}

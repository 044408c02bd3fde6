/*
 * real.c: the table of real libc functions, resolved with dlsym(RTLD_NEXT).
 *
 * Each entry is resolved at its first use (REAL, preload.h): every program the library is preloaded
 * into pays, at each exec, only for the functions it calls (a dlsym costs ~0.15 us; all of them,
 * ~10 us, were a third of what the library added to each command of a shell script). Calls from
 * other libraries' constructors, before main, resolve their entries the same way. Two threads
 * resolving one entry together store the same pointer.
 *
 * dlsym takes the dynamic loader's lock, so the table is completed (goxio_real_init) before the
 * places where a first use could find that lock held by the thread itself or by a thread that is
 * not there any more: before a fork or vfork (a child made while another thread held it; a vfork
 * child, which shares the parent's memory, resolves nothing), before a program's signal handler
 * is installed behind the trampoline (a handler that interrupts dlopen) and before the engine
 * loads (the Go runtime's start-up calls sigaction while dlopen holds the lock). A handler that
 * reaches the kernel without the wrapper (a raw rt_sigaction, glibc's sigset) can still make a
 * first use. dlsym never calls a function this library interposes.
 */
#include "preload.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

struct goxio_real goxio_real;

static pthread_once_t real_once = PTHREAD_ONCE_INIT;

#define RESOLVE(name)                                                                                      \
	do {                                                                                               \
		if (goxio_real.name == NULL)                                                               \
			goxio_real_resolve((void **)&goxio_real.name, #name);                              \
	} while (0)

static void resolve_all(void) {
	RESOLVE(socket);
	RESOLVE(socketpair);
	RESOLVE(close);
	RESOLVE(close_range);
	RESOLVE(closefrom);
	RESOLVE(shutdown);
	RESOLVE(bind);
	RESOLVE(listen);
	RESOLVE(accept);
	RESOLVE(accept4);
	RESOLVE(connect);
	RESOLVE(getsockname);
	RESOLVE(getpeername);
	RESOLVE(setsockopt);
	RESOLVE(getsockopt);
	RESOLVE(read);
	RESOLVE(__read_chk);
	RESOLVE(readv);
	RESOLVE(recv);
	RESOLVE(__recv_chk);
	RESOLVE(recvfrom);
	RESOLVE(__recvfrom_chk);
	RESOLVE(recvmsg);
	RESOLVE(recvmmsg);
	RESOLVE(write);
	RESOLVE(writev);
	RESOLVE(send);
	RESOLVE(sendto);
	RESOLVE(sendmsg);
	RESOLVE(sendmmsg);
	RESOLVE(sendfile);
	RESOLVE(sendfile64);
	RESOLVE(select);
	RESOLVE(pselect);
	RESOLVE(poll);
	RESOLVE(__poll_chk);
	RESOLVE(ppoll);
	RESOLVE(__ppoll_chk);
	RESOLVE(epoll_create);
	RESOLVE(epoll_create1);
	RESOLVE(epoll_ctl);
	RESOLVE(epoll_wait);
	RESOLVE(epoll_pwait);
	RESOLVE(epoll_pwait2);
	RESOLVE(fcntl);
	RESOLVE(fcntl64);
	RESOLVE(ioctl);
	RESOLVE(dup);
	RESOLVE(dup2);
	RESOLVE(dup3);
	RESOLVE(fclose);
	RESOLVE(open);
	RESOLVE(open64);
	RESOLVE(openat);
	RESOLVE(openat64);
	RESOLVE(creat);
	RESOLVE(pipe);
	RESOLVE(pipe2);
	RESOLVE(eventfd);
	RESOLVE(fork);
	RESOLVE(vfork);
	RESOLVE(daemon);
	RESOLVE(posix_spawn);
	RESOLVE(posix_spawnp);
	RESOLVE(system);
	RESOLVE(execve);
	RESOLVE(popen);
	RESOLVE(sigaction);
	RESOLVE(signal);
	RESOLVE(syscall);
	RESOLVE(pthread_getattr_np);
	RESOLVE(siglongjmp);
	RESOLVE(longjmp);
	RESOLVE(_longjmp);
	RESOLVE(__longjmp_chk);
}

void goxio_real_init(void) { pthread_once(&real_once, resolve_all); }

/* fallback names the function that serves name when this glibc lacks it: fcntl64 falls back to
 * fcntl, sendfile64 to sendfile (the same function on 64-bit). Other functions an older glibc
 * lacks stay NULL; their trampolines answer ENOSYS. */
static const char *fallback(const char *name) {
	if (strcmp(name, "fcntl64") == 0)
		return "fcntl";
	if (strcmp(name, "sendfile64") == 0)
		return "sendfile";
	return NULL;
}

void *goxio_real_resolve(void **slot, const char *name) {
	int saved = errno;
	void *p = dlsym(RTLD_NEXT, name);
	if (p == NULL && fallback(name) != NULL)
		p = dlsym(RTLD_NEXT, fallback(name));
	if (p != NULL)
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	errno = saved;
	return p;
}

/*
 * real.c: the table of real libc functions, resolved once with dlsym(RTLD_NEXT).
 *
 * Resolution happens in the earliest constructor, but a call can arrive before it (another
 * library's constructor); REAL() then resolves the table on first use. pthread_once makes that
 * thread-safe; dlsym never calls a function this library interposes.
 */
#include "preload.h"

#include <dlfcn.h>
#include <pthread.h>

struct goxio_real goxio_real;

static pthread_once_t real_once = PTHREAD_ONCE_INIT;

#define RESOLVE(name) goxio_real.name = (__typeof__(goxio_real.name))dlsym(RTLD_NEXT, #name)

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
	RESOLVE(popen);
	RESOLVE(sigaction);
	RESOLVE(signal);
	RESOLVE(syscall);
	/* Functions an older glibc lacks stay NULL; their trampolines answer ENOSYS. fcntl64 falls
	 * back to fcntl, sendfile64 to sendfile (the same function on 64-bit). */
	if (goxio_real.fcntl64 == NULL)
		goxio_real.fcntl64 = goxio_real.fcntl;
	if (goxio_real.sendfile64 == NULL)
		goxio_real.sendfile64 = goxio_real.sendfile;
}

void goxio_real_init(void) { pthread_once(&real_once, resolve_all); }

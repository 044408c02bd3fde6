/*
 * calls_fcntl.c: fcntl and fcntl64, the passthrough call measured against the kernel's own cost
 * (tests/bench/calls.c).
 *
 * They are variadic in <fcntl.h>; this file does not include it and defines them with the third
 * argument named: on the ABIs goxio supports (x86-64 SysV, AArch64 Linux) a variadic argument is
 * passed exactly as a named one, and glibc reads it as a long too. So the common case (an ordinary
 * fd, not F_DUPFD) is one byte load and a tail call into libc, with no va_list to build.
 */
#include "preload.h"

/* From <fcntl.h>, which is not included (see above). */
#define GOXIO_F_DUPFD 0
#define GOXIO_F_DUPFD_CLOEXEC 1030

GOXIO_HIDDEN int goxio_fcntl_slow(int (*real)(int, int, ...), int fd, int cmd, long arg);

typedef int (*fcntl3_fn)(int, int, long);

int fcntl(int fd, int cmd, long arg) {
	if (GOXIO_LIKELY(goxio_fd_flags(fd) == 0) && cmd != GOXIO_F_DUPFD && cmd != GOXIO_F_DUPFD_CLOEXEC)
		return ((fcntl3_fn)REAL(fcntl))(fd, cmd, arg);
	return goxio_fcntl_slow(REAL(fcntl), fd, cmd, arg);
}

int fcntl64(int fd, int cmd, long arg) {
	if (GOXIO_LIKELY(goxio_fd_flags(fd) == 0) && cmd != GOXIO_F_DUPFD && cmd != GOXIO_F_DUPFD_CLOEXEC)
		return ((fcntl3_fn)REAL(fcntl64))(fd, cmd, arg);
	return goxio_fcntl_slow(REAL(fcntl64), fd, cmd, arg);
}

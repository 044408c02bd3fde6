/*
 * fdtable.c: the C-side fd table and the library's internal fds.
 *
 * One byte per fd (GOXIO_FDT_SIZE bytes of bss: pages the program never touches cost no memory).
 * Writers: the engine (through goxio_fdt_set, under its registry lock) and the trampolines that
 * see an fd closed or replaced. Readers: every trampoline, with a relaxed load; a stale read can
 * only send a call to the slow path, which re-checks under the engine's lock.
 */
#include "preload.h"
#include "box.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

volatile uint8_t goxio_fdt[GOXIO_FDT_SIZE];

/* Highest fd that ever had a flag: bounds the scans of close_range. */
static int fdt_high = -1;

/* goxio_ring_fds counts the fds flagged GOXIO_FD_RING: select and poll skip their per-fd scan
 * while it is zero. */
volatile int goxio_ring_fds;

int goxio_is_tag(uint64_t data) {
	return data >= (uint64_t)(uintptr_t)&goxio_fdt[0] && data < (uint64_t)(uintptr_t)&goxio_fdt[GOXIO_FDT_SIZE];
}

uint64_t goxio_fdt_tag(int fd) { return (uint64_t)(uintptr_t)&goxio_fdt[(unsigned)fd % GOXIO_FDT_SIZE]; }

void goxio_fdt_set(int fd, int flags) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE || goxio_in_vfork())
		return; /* a vfork child's fds are its own copies: the parent's table stays as it is */
	if (GOXIO_UNLIKELY(fd == goxio_early_handing_fd))
		flags |= goxio_fd_flags(fd) & GOXIO_FD_LAZY; /* other threads wait for the hand-over (early.c) */
	uint8_t old = __atomic_exchange_n(&goxio_fdt[fd], (uint8_t)flags, __ATOMIC_ACQ_REL);
	if ((old ^ (uint8_t)flags) & GOXIO_FD_RING)
		__atomic_add_fetch(&goxio_ring_fds, (flags & GOXIO_FD_RING) ? 1 : -1, __ATOMIC_RELAXED);
	if ((old ^ (uint8_t)flags) & GOXIO_FD_LAZY)
		__atomic_add_fetch(&goxio_lazy_fds, (flags & GOXIO_FD_LAZY) ? 1 : -1, __ATOMIC_RELAXED);
	if ((old & GOXIO_FD_ENGINE) && !(flags & GOXIO_FD_ENGINE))
		goxio_early_unlisten(fd); /* a listener mark goes with the engine's socket (early.c) */
	if (!(old & GOXIO_FD_ENGINE) && (flags & GOXIO_FD_ENGINE))
		goxio_box_fd_new(fd); /* a new socket of the engine: its plain receives ask again (box.c) */
	if (flags != 0) {
		int high = __atomic_load_n(&fdt_high, __ATOMIC_RELAXED);
		while (fd > high && !__atomic_compare_exchange_n(&fdt_high, &high, fd, 1, __ATOMIC_RELAXED,
								  __ATOMIC_RELAXED))
			;
	}
}

int goxio_fdt_get(int fd) { return goxio_fd_flags(fd); }

int goxio_fdt_high(void) { return __atomic_load_n(&fdt_high, __ATOMIC_RELAXED); }

/* goxio_fdt_reserve grows the process's fd table, just before the loader opens the engine (before
 * the Go runtime starts its threads; a process that never loads the engine pays nothing), to hold
 * the two numbers where the engine starts the Go runtime's netpoller (offload/netpoller.go:
 * min(min(soft limit, GOXIO_FDT_SIZE) - 64, 4032), and the next one; the soft limit is the
 * program's: the engine undoes the runtime's raise of it before, shim/nofile.go). Growing a table
 * that several threads share waits for an RCU grace period (milliseconds); growing it now costs
 * microseconds. nofile is the process's RLIMIT_NOFILE, read by the loader. */
void goxio_fdt_reserve(const struct rlimit *nofile) {
	struct rlimit rl = *nofile;
	long cur = rl.rlim_cur == RLIM_INFINITY ? GOXIO_FDT_SIZE : (long)rl.rlim_cur;
	long hard = rl.rlim_max == RLIM_INFINITY ? GOXIO_FDT_SIZE : (long)rl.rlim_max;
	long base = cur > 128 ? (cur < (long)GOXIO_FDT_SIZE ? cur : (long)GOXIO_FDT_SIZE) - 64 : 1000;
	if (base > 4032)
		base = 4032;
	long want = base + 2;
	struct rlimit up = rl;
	int raised = 0;
	if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur <= want) {
		if (hard <= want)
			return;
		up.rlim_cur = (rlim_t)want + 1;
		if (setrlimit(RLIMIT_NOFILE, &up) != 0)
			return;
		raised = 1;
	}
	int fd = REAL(open)("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		int high = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, (int)want);
		if (high >= 0)
			REAL(close)(high);
		REAL(close)(fd);
	}
	if (raised)
		setrlimit(RLIMIT_NOFILE, &rl);
}

/* ---- internal fds ---- */

#define MAX_INTERNAL 8

/* owners[i] points to the variable that holds internal fd i; guarded by internal_mu. */
static int *owners[MAX_INTERNAL];
static pthread_mutex_t internal_mu = PTHREAD_MUTEX_INITIALIZER;

/* high_base returns where internal fds go: near the top of the soft fd limit, so that they do
 * not take the low numbers a program expects to get, and stay below FD_SETSIZE-using code's
 * concern only when the limit itself is that low. */
static int high_base(void) {
	struct rlimit rl;
	long base = 1000;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 64)
		base = (long)rl.rlim_cur - 32;
	if (base > (long)GOXIO_FDT_SIZE - 64)
		base = GOXIO_FDT_SIZE - 64;
	if (base < 3)
		base = 3;
	return (int)base;
}

/* move_high returns a close-on-exec copy of fd at a high number (closing fd), or fd itself when
 * no high number is free. */
static int move_high(int fd) {
	int nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, high_base());
	if (nfd < 0)
		return fd;
	REAL(close)(fd);
	return nfd;
}

int goxio_internal_adopt(int fd, int *owner) {
	if (fd < 0)
		return fd;
	int saved = errno;
	pthread_mutex_lock(&internal_mu);
	int slot = -1;
	for (int i = 0; i < MAX_INTERNAL; i++)
		if (owners[i] == NULL || owners[i] == owner) {
			slot = i;
			break;
		}
	if (slot < 0) {
		pthread_mutex_unlock(&internal_mu);
		errno = saved;
		return fd;
	}
	fd = move_high(fd);
	owners[slot] = owner;
	__atomic_store_n(owner, fd, __ATOMIC_RELEASE);
	goxio_fdt_set(fd, GOXIO_FD_INTERNAL);
	pthread_mutex_unlock(&internal_mu);
	errno = saved;
	return fd;
}

int goxio_internal_relocate(int fd) {
	if (goxio_in_vfork())
		return 0; /* the child's copy of the fd is replaced; the parent's stays */
	int saved = errno;
	pthread_mutex_lock(&internal_mu);
	for (int i = 0; i < MAX_INTERNAL; i++) {
		if (owners[i] == NULL || __atomic_load_n(owners[i], __ATOMIC_ACQUIRE) != fd)
			continue;
		int nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, high_base());
		if (nfd >= 0) {
			goxio_fdt_set(nfd, GOXIO_FD_INTERNAL);
			__atomic_store_n(owners[i], nfd, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(owners[i], -1, __ATOMIC_RELEASE);
		}
		/* The program's dup2 replaces the old number; the table must not hide it any more. */
		goxio_fdt_set(fd, 0);
		break;
	}
	pthread_mutex_unlock(&internal_mu);
	errno = saved;
	return 0;
}

/* goxio_internal_lost is called when an internal fd's number comes back from a creating call:
 * the fd was closed behind the library's back, so its owner must stop using the number. */
void goxio_internal_lost(int fd) {
	if (goxio_in_vfork())
		return;
	pthread_mutex_lock(&internal_mu);
	for (int i = 0; i < MAX_INTERNAL; i++)
		if (owners[i] != NULL && __atomic_load_n(owners[i], __ATOMIC_ACQUIRE) == fd)
			__atomic_store_n(owners[i], -1, __ATOMIC_RELEASE);
	goxio_fdt_set(fd, 0);
	pthread_mutex_unlock(&internal_mu);
}

/*
 * lifecycle.c: start-up, readiness and forked children.
 *
 * Start-up order inside the process (checked by tests/semantic signalfd and fd-list programs):
 *  1. goxio_early (constructor priority 101, before the Go runtime's constructor): resolves the
 *     real functions, remembers this library's address range, detects a Go main program, maps the
 *     fork-detection page, grows the fd table to hold the Go runtime's netpoller high
 *     (goxio_fdt_reserve), and blocks asynchronous signals so every thread the Go runtime creates
 *     inherits a mask in which the program's signals are blocked (signalfd programs keep working).
 *  2. the Go runtime's constructor: installs its signal handlers (through our sigaction wrapper,
 *     which notes that it ran) and starts the Go initialization on a new thread. The runtime's
 *     threads share the program's fd table (see "Runtime threads and the fd table" below).
 *  3. goxio_late (plain constructor, after the runtime's): when the runtime's constructor really
 *     ran, calls into Go (goxio_go_start), which waits for the Go initialization and then, on this,
 *     the program's main thread, does the library's start-up: parameters, logger (the log file
 *     becomes an internal fd of the program's table), banner on fd 2, rules, statistics segment,
 *     engine; then restores the main thread's signal mask. The engine is ready before main().
 *
 * Runtime threads and the fd table:
 * Linux takes an atomic reference on the file in every fd system call (fdget) once the fd table
 * is shared by several threads, so the Go runtime's threads make a single-threaded program pay a
 * few nanoseconds more per passthrough call. Giving each runtime thread a private, empty fd table
 * (close_range(CLOSE_RANGE_UNSHARE) from a pthread_create wrapper) removes that cost, and was
 * tried: it is unsafe. The runtime starts its network poller (an epoll fd and an eventfd) at its
 * first timer, which the runtime itself arms (the background scavenger after a GC cycle), on
 * whatever thread runs it; every M then polls those fds (findRunnable, startTheWorld). With
 * private tables the fds exist in one table only and the process aborts with "runtime: netpoll
 * failed" (seen under the shared-memory transport's garbage). So every runtime thread shares the
 * program's table, as any thread of the program does.
 *
 * Forked children: the Go runtime does not survive fork(). A page mapped with MADV_WIPEONFORK
 * reads as zero in any child made without CLONE_VM (fork, _Fork, daemon, raw clone), so the
 * trampolines see the child with one load and never enter Go there; the pthread_atfork child
 * handler is a second guard for kernels without MADV_WIPEONFORK.
 */
#include "goxio.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

#define ALIVE_MAGIC 0x676f78696f6f6bULL

static volatile uint64_t *alive_page;
static volatile int in_child;
static volatile int ready;
static int main_is_go;

static sigset_t saved_mask;
static volatile int mask_saved;

/* Set by the sigaction wrapper when the Go runtime installs its handlers (step 2 above). */
volatile int goxio_runtime_ctor_ran;

/* This library's mapped address range, to recognise the Go runtime's own signal handlers. */
uintptr_t goxio_self_lo, goxio_self_hi;

extern int goxio_go_start(void); /* Go export: waits for the Go initialization, starts the engine */

int goxio_active(void) {
	if (GOXIO_UNLIKELY(!ready))
		return 0;
	if (alive_page != NULL)
		return *alive_page == ALIVE_MAGIC && !in_child;
	return !in_child;
}

void goxio_set_ready(int r) { __atomic_store_n(&ready, r, __ATOMIC_RELEASE); }

int goxio_main_is_go(void) { return main_is_go; }

int goxio_is_forked_child(void) {
	if (in_child)
		return 1;
	return alive_page != NULL && *alive_page != ALIVE_MAGIC;
}

static void atfork_child(void) { in_child = 1; }

/* note_is_go reports whether a PT_NOTE segment holds Go's build-id note ("Go", type 4). */
static int note_is_go(const char *p, size_t size) {
	size_t off = 0;
	while (off + sizeof(ElfW(Nhdr)) <= size) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(p + off);
		size_t name = (n->n_namesz + 3) & ~(size_t)3, desc = (n->n_descsz + 3) & ~(size_t)3;
		const char *nm = p + off + sizeof(*n);
		if (off + sizeof(*n) + name + desc > size)
			return 0;
		if (n->n_namesz == 3 && n->n_type == 4 && memcmp(nm, "Go", 3) == 0)
			return 1;
		off += sizeof(*n) + name + desc;
	}
	return 0;
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	int *index = data;
	uintptr_t self = (uintptr_t)&goxio_active;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (*index == 0 && ph->p_type == PT_NOTE && note_is_go((const char *)lo, ph->p_memsz))
			main_is_go = 1;
		if (ph->p_type == PT_LOAD && self >= lo && self < lo + ph->p_memsz) {
			/* our object: record the span of all its PT_LOAD segments */
			uintptr_t a = ~(uintptr_t)0, b = 0;
			for (int j = 0; j < info->dlpi_phnum; j++) {
				const ElfW(Phdr) *q = &info->dlpi_phdr[j];
				if (q->p_type != PT_LOAD)
					continue;
				uintptr_t qlo = info->dlpi_addr + q->p_vaddr;
				if (qlo < a)
					a = qlo;
				if (qlo + q->p_memsz > b)
					b = qlo + q->p_memsz;
			}
			goxio_self_lo = a;
			goxio_self_hi = b;
		}
	}
	(*index)++;
	return 0;
}

__attribute__((constructor(101))) static void goxio_early(void) {
	int saved = errno;
	goxio_real_init();
	int index = 0;
	dl_iterate_phdr(phdr_cb, &index);

	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		if (madvise(p, 4096, MADV_WIPEONFORK) == 0) {
			*(volatile uint64_t *)p = ALIVE_MAGIC;
			alive_page = p;
		} else {
			munmap(p, 4096);
		}
	}
	pthread_atfork(NULL, NULL, atfork_child);
	goxio_fdt_reserve();

	if (pthread_sigmask(SIG_SETMASK, NULL, &saved_mask) == 0) {
		mask_saved = 1;
		goxio_block_async_signals();
	}
	errno = saved;
}

void goxio_restore_sigmask(void) {
	if (mask_saved) {
		mask_saved = 0;
		pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	}
}

__attribute__((constructor)) static void goxio_late(void) {
	int saved = errno;
	if (goxio_runtime_ctor_ran)
		goxio_go_start();
	goxio_restore_sigmask();
	errno = saved;
}

void goxio_mark_child(void) { in_child = 1; }

extern void goxio_go_exit(void); /* Go export: removes the statistics segment */

__attribute__((destructor)) static void goxio_fini(void) {
	int saved = errno;
	if (goxio_active())
		goxio_go_exit();
	errno = saved;
}

/*
 * lifecycle.c: start-up, readiness and forked children.
 *
 * Start-up: the library has no constructor: the real functions are resolved at their first use
 * (real.c), a Go main program is detected when the engine loads. Nothing happens before the
 * program's main(): no Go runtime, no thread, no banner, no file. The engine is loaded by the first call that needs it (loader.c) and calls
 * goxio_set_ready once it serves calls.
 *
 * Runtime threads and the fd table:
 * Linux takes an atomic reference on the file in every fd system call (fdget) once the fd table
 * is shared by several threads, so the Go runtime's threads make a single-threaded program pay a
 * few nanoseconds more per passthrough call; with the engine loaded on demand, only processes
 * that use inet sockets pay it. Giving each runtime thread a private, empty fd table
 * (close_range(CLOSE_RANGE_UNSHARE) from a pthread_create wrapper) was tried and is unsafe: the
 * runtime's network poller fds must be visible to every M. So every runtime thread shares the
 * program's table, as any thread of the program does.
 *
 * Forked children: the Go runtime does not survive fork(). A page mapped with MADV_WIPEONFORK
 * when the engine starts loading reads as zero in any child made without CLONE_VM (fork, _Fork,
 * daemon, raw clone), so the trampolines see such a child with one load and never enter Go
 * there; the pthread_atfork child handler is a second guard for kernels without
 * MADV_WIPEONFORK. A child of a process that never loaded the engine is not such a child: it
 * loads its own when it needs it.
 */
#include "preload.h"

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

/* alive_page is published (release) only after its magic is written, and read with acquire
 * (alive): a thread that saw it before the magic would take the loading process for a forked
 * child, and its sockets made then for kernel sockets for good. The compiler had moved the
 * pointer's store before the magic's (a page fault apart: the first write to the new page), and
 * under load some threads' sockets of a process whose engine was loading missed the engine. */
static volatile uint64_t *alive_page;
static volatile int in_child;
static volatile int ready;
static int main_is_go;

static inline volatile uint64_t *alive(void) { return __atomic_load_n(&alive_page, __ATOMIC_ACQUIRE); }

/* page_wiped reports a fork-detection page that reads zero: this is a child forked after the
 * engine started loading. */
static inline int page_wiped(void) {
	volatile uint64_t *p = alive();
	return p != NULL && *p != ALIVE_MAGIC;
}

int goxio_active(void) {
	if (GOXIO_UNLIKELY(!ready) || goxio_in_vfork())
		return 0;
	return !page_wiped() && !in_child;
}

void goxio_set_ready(int r) { __atomic_store_n(&ready, r, __ATOMIC_RELEASE); }

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data);

/* goxio_main_is_go reports whether the program is written in Go (asked when the engine loads,
 * not at start-up: every process pays for what the constructor does). */
int goxio_main_is_go(void) {
	int index = 0;
	dl_iterate_phdr(phdr_cb, &index);
	return main_is_go;
}

int goxio_is_forked_child(void) {
	if (in_child || goxio_in_vfork())
		return 1;
	return page_wiped();
}

static void atfork_child(void);

/* goxio_alive_arm maps the fork-detection page, as the engine starts loading. */
void goxio_alive_arm(void) {
	if (alive() != NULL)
		return;
	pthread_atfork(NULL, NULL, atfork_child);
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (madvise(p, 4096, MADV_WIPEONFORK) != 0) {
		munmap(p, 4096);
		return;
	}
	*(volatile uint64_t *)p = ALIVE_MAGIC;
	__atomic_store_n(&alive_page, (volatile uint64_t *)p, __ATOMIC_RELEASE);
}

/* goxio_alive_lost reports a forked child of a process that started loading the engine. */
int goxio_alive_lost(void) { return in_child || page_wiped(); }

static void atfork_child(void) {
	if (goxio_engine_loaded())
		in_child = 1;
}
/* note_is_go reports whether a PT_NOTE segment holds Go's build-id note ("Go", type 4; the Go linker
 * pads its name to 4 bytes, "Go" and two NULs, and says so in n_namesz). */
static int note_is_go(const char *p, size_t size) {
	size_t off = 0;
	while (off + sizeof(ElfW(Nhdr)) <= size) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(p + off);
		size_t name = (n->n_namesz + 3) & ~(size_t)3, desc = (n->n_descsz + 3) & ~(size_t)3;
		const char *nm = p + off + sizeof(*n);
		if (off + sizeof(*n) + name + desc > size)
			return 0;
		if ((n->n_namesz == 3 || n->n_namesz == 4) && n->n_type == 4 && memcmp(nm, "Go", 3) == 0)
			return 1;
		off += sizeof(*n) + name + desc;
	}
	return 0;
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	int *index = data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (*index == 0 && ph->p_type == PT_NOTE &&
		    note_is_go((const char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz))
			main_is_go = 1;
	}
	(*index)++;
	return *index > 0; /* the program is the first object */
}


void goxio_mark_child(void) {
	if (goxio_engine_loaded())
		in_child = 1;
}

__attribute__((destructor)) static void goxio_fini(void) {
	int saved = errno;
	if (goxio_active() && goxio_eng.exit != NULL)
		GOXIO_GO(goxio_eng.exit()); /* a handler's socket call meanwhile must not enter it again */
	errno = saved;
}

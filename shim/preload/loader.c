/*
 * loader.c: the engine, loaded on demand.
 *
 * A process under libgoxio.so has no Go runtime until it first moves data on, or waits on, an
 * AF_INET or AF_INET6 TCP or UDP socket (a GOXIO_FD_LAZY fd, or an epoll set holding one). That
 * call loads libgoxio-engine.so (next to this library: goxio_self_name; or at $GOXIO_ENGINE)
 * with dlopen, once, under load_mu; other threads that need it meanwhile wait for the load. The engine gets
 * the C side through one call (goxio_engine_init, shim/goxio.h), starts (banner, statistics
 * segment), adopts every socket and epoll set flagged lazy, and only then is the state READY.
 *
 * The load runs with the program's asynchronous signals blocked, so that the threads the Go
 * runtime makes inherit a mask in which they are blocked (signalfd programs keep receiving
 * them); the calling thread's mask is restored afterwards.
 *
 * Forked children: a child of a process that never started the load is a process like any other
 * and loads its own engine when it needs one (a prefork server's workers). A child of a process
 * that started it (READY, or LOADING on another thread: fork waits for the load to end) never
 * enters Go: the Go runtime does not survive fork. The alive page (MADV_WIPEONFORK, mapped when
 * the load starts) reads zero in any such child, also one made by a raw clone.
 */
#include "preload.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { ENG_NONE, ENG_LOADING, ENG_READY, ENG_FAILED };

static volatile int state;
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int in_load;

struct goxio_engine goxio_eng;
volatile int goxio_lazy_fds;

static uintptr_t eng_lo, eng_hi;
GOXIO_COLD static char eng_path[PATH_MAX];

/* what the C side knows of lazy sockets, by fd; mapped at the first need (MAP_NORESERVE) */
static struct goxio_lazy_info *lazy_info;

extern int goxio_quiet_threads;
GOXIO_HIDDEN void goxio_alive_arm(void);

/* ---- reasons, said once ---- */

enum { WHY_SIGNAL, WHY_VFORK, WHY_DLOPEN, WHY_INIT, WHY_MAX };
static int said[WHY_MAX];

/* vfork_said is the pid of the last vfork child that said why: each vfork child says it once,
 * and the parent, which shares this memory, never reads it (the one word a vfork child writes). */
static volatile pid_t vfork_said;

static void say(int why, const char *what, const char *detail) {
	if (why == WHY_VFORK) {
		pid_t me = getpid();
		if (__atomic_exchange_n(&vfork_said, me, __ATOMIC_RELAXED) == me)
			return;
	} else if (__atomic_exchange_n(&said[why], 1, __ATOMIC_RELAXED)) {
		return;
	}
	const char *parts[] = {"goxio: the engine is not loaded (", what, detail ? ": " : "", detail ? detail : "",
			       "); this call goes to the kernel\n"};
	goxio_say_parts(parts, sizeof parts / sizeof parts[0]);
}

/* ---- engine address range (its signal handlers) ---- */

int goxio_in_engine_loaded(uintptr_t h) {
	uintptr_t hi = __atomic_load_n(&eng_hi, __ATOMIC_ACQUIRE);
	return hi != 0 && h >= eng_lo && h < hi;
}

int goxio_in_engine(uintptr_t h) {
	if (eng_hi != 0)
		return goxio_in_engine_loaded(h);
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != ENG_LOADING || eng_path[0] == 0)
		return 0;
	/* During the load (the runtime installs its handlers from its own thread): by file name. */
	Dl_info di;
	return dladdr((void *)h, &di) != 0 && di.dli_fname != NULL && strcmp(di.dli_fname, eng_path) == 0;
}

struct range_arg {
	uintptr_t addr, lo, hi;
};

static int range_cb(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	struct range_arg *a = data;
	uintptr_t lo = ~(uintptr_t)0, hi = 0;
	int mine = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
		if (a->addr >= s && a->addr < e)
			mine = 1;
		if (s < lo)
			lo = s;
		if (e > hi)
			hi = e;
	}
	if (!mine)
		return 0;
	a->lo = lo;
	a->hi = hi;
	return 1;
}

/* ---- finding the engine ---- */

/* goxio_self_name is the name the loader loaded this library under (its LD_PRELOAD entry, or the
 * path it found for a file name, or dlopen's argument): the entry of the loader's list whose
 * dynamic section is ours, read without the loader's lock (dladdr takes it, and exec.c may ask
 * in a forked child, where a thread that held it is gone): entries are only appended while the
 * program runs, and this library's is never removed. NULL when the list does not hold it (a
 * dlmopen namespace of its own). */
extern ElfW(Dyn) _DYNAMIC[];
const char *goxio_self_name(void) {
	for (struct link_map *l = _r_debug.r_map; l != NULL; l = l->l_next)
		if (l->l_ld == _DYNAMIC)
			return l->l_name;
	return NULL;
}

static int engine_path(void) {
	const char *env = getenv("GOXIO_ENGINE");
	if (env != NULL && env[0] != 0) {
		if (strlen(env) >= sizeof eng_path)
			return -1;
		strcpy(eng_path, env);
		return 0;
	}
	const char *self = goxio_self_name();
	Dl_info di;
	if (self == NULL && dladdr((void *)&goxio_engine_need, &di) != 0)
		self = di.dli_fname;
	if (self == NULL)
		return -1;
	const char *slash = strrchr(self, '/');
	size_t dir = slash ? (size_t)(slash - self + 1) : 0;
	static const char name[] = "libgoxio-engine.so";
	if (dir + sizeof name > sizeof eng_path)
		return -1;
	memcpy(eng_path, self, dir);
	memcpy(eng_path + dir, name, sizeof name);
	return 0;
}

/* ---- lazy sockets ---- */

static struct goxio_lazy_info *info_of(int fd, int make) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE)
		return NULL;
	struct goxio_lazy_info *t = __atomic_load_n(&lazy_info, __ATOMIC_ACQUIRE);
	if (t == NULL && make) {
		void *p = mmap(NULL, sizeof(*t) * GOXIO_FDT_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		struct goxio_lazy_info *none = NULL;
		if (!__atomic_compare_exchange_n(&lazy_info, &none, (struct goxio_lazy_info *)p, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			munmap(p, sizeof(*t) * GOXIO_FDT_SIZE);
		t = __atomic_load_n(&lazy_info, __ATOMIC_ACQUIRE);
	}
	return t == NULL ? NULL : &t[fd];
}

struct goxio_lazy_info *goxio_lazy_info_of(int fd, int make) { return info_of(fd, make); }

static void unlazy(int fd);

static void adopt(int fd) {
	struct goxio_lazy_info none = {0}, *i = info_of(fd, 0);
	if (i != NULL && goxio_lazy_early_end(i)) {
		/* A UDP socket in its early phase with a receive of another thread asleep in the
		 * kernel socket: the kernel's for good (early.c). */
		unlazy(fd);
		return;
	}
	GOXIO_ENTER(goxio_eng.adopt(fd, i != NULL ? i : &none));
	if (i != NULL)
		memset(i, 0, sizeof *i);
	/* A listener's entry written from C is the engine's now if it took it over; else gone. */
	goxio_lazy_listen_gone(fd);
}

/* unlazy clears fd's lazy flags and what the C side noted of it: a plain kernel fd from now on. */
static void unlazy(int fd) {
	uint8_t fl = goxio_fd_flags(fd);
	if (fl & (GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL))
		goxio_fdt_set(fd, fl & ~(GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL));
	goxio_lazy_forget(fd);
}

void goxio_lazy_plain(int fd) {
	if (!goxio_in_vfork())
		unlazy(fd);
}

void goxio_lazy_forget(int fd) {
	if (goxio_in_vfork())
		return; /* the notes and the listener's entry are the parent's */
	struct goxio_lazy_info *i = info_of(fd, 0);
	if (i != NULL) {
		goxio_early_closed(i);
		goxio_early_forget(i, __atomic_load_n(&i->how, __ATOMIC_ACQUIRE)); /* its pairing entry */
		memset(i, 0, sizeof *i);
	}
	goxio_lazy_listen_gone(fd);
}

void goxio_lazy_mark(int fd, uint32_t how, int ref, const struct sockaddr *peer, socklen_t len) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE || goxio_in_vfork())
		return; /* a vfork child's sockets are the kernel's; its notes would be the parent's */
	if (how != 0) {
		struct goxio_lazy_info *i = info_of(fd, 1);
		if (i != NULL) {
			if (how & GOXIO_LAZY_ACCEPTED)
				i->ref = ref;
			if ((how & GOXIO_LAZY_CONNECTED) && peer != NULL && len >= sizeof(struct sockaddr_in) &&
			    peer->sa_family == AF_INET) {
				memcpy(&i->peer, peer, sizeof i->peer);
				i->peer6.sin6_family = 0;
			} else if ((how & GOXIO_LAZY_CONNECTED) && peer != NULL && len >= sizeof(struct sockaddr_in6) &&
				   peer->sa_family == AF_INET6) {
				memcpy(&i->peer6, peer, sizeof i->peer6);
				i->peer.sin_family = 0;
			}
			i->how |= how;
		}
	}
	if (!(goxio_fd_flags(fd) & GOXIO_FD_LAZY))
		goxio_fdt_set(fd, goxio_fd_flags(fd) | GOXIO_FD_LAZY);
	/* The engine may have become ready since the caller looked: then it adopts the fd now. */
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENG_READY && goxio_active())
		goxio_lazy_fd(fd);
}

int goxio_lazy_waits(int fd) {
	struct goxio_lazy_info *i = info_of(fd, 0);
	if (i == NULL)
		return 1;
	if (goxio_early_is(i) || goxio_early_udp_is(i) || goxio_lazy_early_is(i))
		return 0; /* the kernel's readiness is the socket's in its early phase (early.c) */
	if (goxio_lazy_recv_plain(fd, -1))
		return 0; /* a UDP socket that only sent to the kernel: plain now (lazy_ksend.c) */
	uint32_t how = __atomic_load_n(&i->how, __ATOMIC_RELAXED);
	if (!(how & GOXIO_LAZY_LISTENING))
		return 1;
	if (goxio_in_vfork())
		return 0; /* a vfork child publishes nothing */
	/* A listener this process did not publish (a forked child's inherited one): now. */
	if (!(how & GOXIO_LAZY_DIR_TRIED) && !(__atomic_fetch_or(&i->how, GOXIO_LAZY_DIR_TRIED, __ATOMIC_RELAXED) &
					       GOXIO_LAZY_DIR_TRIED))
		goxio_lazy_listen(fd);
	return 0;
}

void goxio_lazy_fork(uint32_t how) {
	if (__atomic_load_n(&goxio_lazy_fds, __ATOMIC_RELAXED) == 0 || goxio_in_vfork())
		return;
	if (goxio_engine_loaded()) {
		/* The child shares the late sockets: they stay the kernel's (late.c). */
		if (how == GOXIO_LAZY_FORKED)
			goxio_late_plain_all();
		return;
	}
	int high = goxio_fdt_high();
	for (int fd = 0; fd <= high; fd++) {
		if (!(goxio_fd_flags(fd) & GOXIO_FD_LAZY))
			continue;
		struct goxio_lazy_info *i = info_of(fd, 1);
		if (i != NULL && (how != GOXIO_LAZY_CHILD || (i->how & GOXIO_LAZY_FORKED)))
			__atomic_fetch_or(&i->how, how, __ATOMIC_RELAXED);
		if (i != NULL && how == GOXIO_LAZY_CHILD) /* the parent's entries are not the child's */
			__atomic_fetch_and(&i->how, ~(uint32_t)GOXIO_LAZY_DIR_TRIED, __ATOMIC_RELAXED);
	}
}

/* sweep hands every lazy socket, then every lazy epoll set, to the engine. */
static void sweep(void) {
	int high = goxio_fdt_high();
	for (int fd = 0; fd <= high; fd++)
		if (goxio_fd_flags(fd) & GOXIO_FD_LAZY)
			adopt(fd);
	for (int fd = 0; fd <= high; fd++)
		if (goxio_fd_flags(fd) & GOXIO_FD_LAZY_EPOLL)
			adopt(fd);
}

/* drop_lazy clears every lazy flag: without an engine, those fds are plain kernel fds. */
static void drop_lazy(void) {
	int high = goxio_fdt_high();
	for (int fd = 0; fd <= high; fd++)
		if (goxio_fd_flags(fd) & (GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL))
			unlazy(fd);
}

/* ---- the load ---- */

static struct goxio_host host;

static void load(void) {
	__atomic_store_n(&state, ENG_LOADING, __ATOMIC_RELEASE);
	in_load = 1;
	/* The Go runtime calls sigaction (our wrapper) from its own thread while dlopen, on this one,
	 * holds the loader's lock: no first dlsym there (real.c). */
	goxio_real_init();
	goxio_alive_arm();
	sigset_t old;
	int masked = pthread_sigmask(SIG_SETMASK, NULL, &old) == 0;
	if (masked)
		goxio_block_async_signals();

	int ok = 0;
	int go = goxio_main_is_go();
	if (go) {
		/* A Go program makes its sockets with raw system calls; one that reaches here through
		 * libc (cgo) keeps the kernel: a second Go runtime is not loaded into it. goxio run
		 * says so before it starts such a program. */
		goto out;
	}
	if (engine_path() != 0) {
		say(WHY_DLOPEN, "no path for libgoxio-engine.so", NULL);
		goto out;
	}
	/* The fd limit the program has now. Its soft part: the Go runtime raises it at its
	 * initialisation, the engine lowers it back (goxio_host.nofile_cur). And the engine starts
	 * the Go runtime's netpoller high (offload/netpoller.go): the fd table is grown to hold it
	 * now, before the runtime's threads share it. */
	struct rlimit nofile;
	int64_t nofile_cur = -1;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0) {
		if (nofile.rlim_cur != RLIM_INFINITY)
			nofile_cur = (int64_t)nofile.rlim_cur;
		goxio_fdt_reserve(&nofile);
	}
	void *h = dlopen(eng_path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *err = dlerror();
		say(WHY_DLOPEN, "dlopen failed", err ? err : eng_path);
		goto out;
	}
	goxio_engine_init_fn init = (goxio_engine_init_fn)dlsym(h, "goxio_engine_init");
	if (init == NULL) {
		say(WHY_DLOPEN, "no goxio_engine_init in", eng_path);
		goto out;
	}
	struct range_arg ra = {.addr = (uintptr_t)init};
	dl_iterate_phdr(range_cb, &ra);
	eng_lo = ra.lo;
	__atomic_store_n(&eng_hi, ra.hi, __ATOMIC_RELEASE);

	host = (struct goxio_host){
		.size = sizeof host,
		.fdt_set = goxio_fdt_set,
		.fdt_get = goxio_fdt_get,
		.fdt_tag = goxio_fdt_tag,
		.internal_adopt = goxio_internal_adopt,
		.sig_counters = goxio_sig_counters,
		.spill_set = goxio_spill_set,
		.set_ready = goxio_set_ready,
		.quiet_threads = &goxio_quiet_threads,
		.main_is_go = go,
		.ksend_setup = goxio_ksend_setup,
		.ksend_put = goxio_ksend_put,
		.ksend_put_tcp = goxio_ksend_put_tcp,
		.ksend_fd = goxio_ksend_fd,
		.ksend_drop = goxio_ksend_drop,
		.ksend_peer = goxio_ksend_peer,
		.vma_api_used = &goxio_vma_api_used,
		.nofile_cur = nofile_cur,
		.early_setup = goxio_early_setup,
		.early_listener = goxio_early_listener,
		.early_spin = goxio_early_spin,
		.rsend_set = goxio_rsend_set,
		.rsend_drop = goxio_rsend_drop,
	};
	goxio_eng.size = sizeof goxio_eng;
	int started;
	GOXIO_ENTER(started = init(&host, &goxio_eng));
	if (!started || !goxio_active()) {
		say(WHY_INIT, "the engine did not start", NULL);
		goto out;
	}
	sweep();
	ok = 1;
out:
	if (masked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ok) {
		__atomic_store_n(&state, ENG_FAILED, __ATOMIC_RELEASE);
		drop_lazy();
	} else {
		__atomic_store_n(&state, ENG_READY, __ATOMIC_RELEASE);
		sweep(); /* what other threads flagged while the first sweep ran */
	}
	in_load = 0;
}

int goxio_engine_need(void) {
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	if (GOXIO_LIKELY(s == ENG_READY))
		return goxio_active();
	if (s == ENG_FAILED)
		return 0;
	if (s != ENG_NONE && goxio_alive_lost())
		return 0; /* a forked child of a process that has (or was loading) the engine */
	if (in_load)
		return 0;
	if (goxio_in_vfork()) {
		say(WHY_VFORK, "vfork child", NULL);
		return 0;
	}
	if (goxio_sig_depth > 0) {
		say(WHY_SIGNAL, "first data call inside a signal handler", NULL);
		return 0;
	}
	pthread_mutex_lock(&load_mu);
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENG_NONE)
		load();
	pthread_mutex_unlock(&load_mu);
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENG_READY && goxio_active();
}

int goxio_engine_loaded(void) { return __atomic_load_n(&state, __ATOMIC_ACQUIRE) != ENG_NONE; }

int goxio_engine_absent(void) {
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENG_NONE && !goxio_in_vfork() && !in_load;
}

/* goxio_engine_settle is called by fork before it forks: a load under way on another thread is
 * waited for, so that the child is made from a process with the engine or without it. */
GOXIO_HIDDEN void goxio_engine_settle(void) {
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENG_LOADING && !in_load) {
		pthread_mutex_lock(&load_mu);
		pthread_mutex_unlock(&load_mu);
	}
}

void goxio_lazy_fd(int fd) {
	if (goxio_late_birth(fd))
		return;
	if (!goxio_engine_need()) {
		/* No engine for this process (now or ever): once it failed, the fd is a plain one. */
		if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENG_FAILED &&
		    (goxio_fd_flags(fd) & (GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL)))
			unlazy(fd);
		return;
	}
	if (goxio_fd_flags(fd) & (GOXIO_FD_LAZY | GOXIO_FD_LAZY_EPOLL))
		adopt(fd);
}


/*
 * exec.c: a program that can never hand goxio a socket starts without the library.
 *
 * Loading any preloaded library costs each exec the loader's work for one more object: an open,
 * five mappings and about a dozen page faults, 60-85 us on a VM (where a page fault costs ~3 us),
 * 5-7% of a short command such as cat or date. A shell script pays it for every command. So execve
 * and execv look at the program first, and start it with the environment it would have had without
 * goxio (LD_PRELOAD left out) when none of this holds:
 *   - the program or a library it needs imports a socket call, an exec or spawn function, dlopen or
 *     syscall (elfscan.c lists them): it could create or receive an inet socket, load code that
 *     does, or start a program that does (which needs the library in its environment); libselinux
 *     is the one library whose imports are known to serve local sockets only (local_only);
 *   - it inherits an inet socket: an fd that is not close-on-exec is an AF_INET or AF_INET6 socket
 *     (the engine would adopt it; datagrams spilled for it at a fork are read through the library);
 *     every fd below EXEC_PROBE_FDS is looked at, and above it those the fd table knows (below
 *     EXEC_TABLE_FDS), so a socket inherited by this process image at a high number and never
 *     used here is not seen;
 *   - anything is unsure: a script (its interpreter is a program of its own), a static or non-x86-64
 *     program, an object with a run path of its own (DT_RPATH, DT_RUNPATH) or LD_LIBRARY_PATH set,
 *     a library not found in /etc/ld.so.cache or the system directories, LD_PRELOAD naming more than
 *     this library, a malformed file, GOXIO_PRELOAD_ALL=1 in the new environment.
 * A program started so is exactly what it is without goxio (same environment, no library), so
 * nothing it does can differ. glibc's own libraries (libc, libm, ...) are not read: what they import
 * they use for the functions of theirs a program calls, and those functions are what the program
 * imports. What glibc loads by itself (NSS modules) uses the kernel then, as without goxio.
 *
 * The answer for a program file (device, inode, size, modification time) is kept in a small table
 * of this process, so a shell that runs ls a hundred times reads it once: dash execs in a vfork
 * child, which writes the table in its parent's memory (the only state of the library a vfork child
 * writes: each slot is claimed with a compare-and-swap and published last, so the parent's other
 * threads and other vfork children read whole slots only); a forked child's answers stay its own.
 *
 * Everything here is async-signal-safe and allocates nothing: files are mapped and unmapped before
 * the real execve (a vfork child's mappings are its parent's), the new environment is built on the
 * stack. VMA_TRACELEVEL=DEBUG (5) or higher says, on stderr, each decision and its reason.
 */
#include "preload.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* EXEC_PROBE_FDS: the fds all looked at for an inherited inet socket (above it, those the fd table
 * knows, below EXEC_TABLE_FDS). EXEC_MAX_ENV: a larger environment keeps the library (the new one
 * is built on the stack). */
#define EXEC_PROBE_FDS 64
#define EXEC_TABLE_FDS 65536
#define EXEC_MAX_ENV 1024
#define EXEC_MAX_OBJECTS 48
#define EXEC_NAME_MAX 96
#define EXEC_FILE_MAX (256u << 20)

/* ---- the table of answers ---- */

enum { SLOT_EMPTY, SLOT_BUSY, SLOT_PRUNE, SLOT_KEEP };

struct exec_slot {
	uint32_t state;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

#define EXEC_SLOTS 64
static struct exec_slot slots[EXEC_SLOTS];

static int same(const struct exec_slot *s, const struct stat *st) {
	return s->dev == st->st_dev && s->ino == st->st_ino && s->size == st->st_size &&
	       s->mtime.tv_sec == st->st_mtim.tv_sec && s->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static unsigned slot_hash(const struct stat *st) { return (unsigned)((st->st_ino * 0x9E3779B97F4A7C15ull) >> 58); }

static int slot_find(const struct stat *st) {
	for (unsigned i = 0, h = slot_hash(st); i < 4; i++) {
		struct exec_slot *s = &slots[(h + i) % EXEC_SLOTS];
		uint32_t v = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
		if (v == SLOT_EMPTY)
			return SLOT_EMPTY;
		if (v != SLOT_BUSY && same(s, st))
			return (int)v;
	}
	return SLOT_EMPTY;
}

static void slot_put(const struct stat *st, uint32_t v) {
	for (unsigned i = 0, h = slot_hash(st); i < 4; i++) {
		struct exec_slot *s = &slots[(h + i) % EXEC_SLOTS];
		uint32_t empty = SLOT_EMPTY;
		if (!__atomic_compare_exchange_n(&s->state, &empty, SLOT_BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		s->dev = st->st_dev;
		s->ino = st->st_ino;
		s->size = st->st_size;
		s->mtime = st->st_mtim;
		__atomic_store_n(&s->state, v, __ATOMIC_RELEASE);
		return;
	}
}

/* ---- the program and the libraries it needs ---- */

struct closure {
	char names[EXEC_MAX_OBJECTS][EXEC_NAME_MAX];
	int n;
	const char *why;		  /* the reason to keep the library, a static string or a name */
	char whybuf[512];		  /* ... copied here when it pointed into a mapped file */
};

static int add_name(void *ctx, const char *name) {
	struct closure *c = ctx;
	size_t l = strlen(name);
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->names[i], name) == 0)
			return 0;
	if (c->n == EXEC_MAX_OBJECTS || l >= EXEC_NAME_MAX)
		return -1;
	memcpy(c->names[c->n++], name, l + 1);
	return 0;
}

/* glibc's own objects: not read (see the top of the file). */
static int glibc_object(const char *name) {
	static const char *const own[] = {"libc.so.6",	  "libm.so.6",	  "libpthread.so.0",	      "libdl.so.2",
					  "librt.so.1",	  "libutil.so.1", "ld-linux-x86-64.so.2", "libmvec.so.1"};
	for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
		if (strcmp(name, own[i]) == 0)
			return 1;
	return 0;
}

/* Libraries whose imports are known not to lead to an inet socket or another program: only their
 * needed libraries are read. libselinux (ls, cp, mkdir, sed, find, ... need it) opens the kernel's
 * SELinux netlink socket (avc_netlink_open) and the AF_UNIX socket of the context translation
 * daemon, dlopens libsepol and execs load_policy to load a policy (selinux_mkload_policy). */
static int local_only(const char *name) { return strcmp(name, "libselinux.so.1") == 0; }

struct mapped {
	const unsigned char *p;
	size_t len;
};

/* map_file maps path read-only: 0, -1 when it cannot be opened, -2 when it is not a regular file of
 * a sane size or cannot be mapped. A file mapped so must not shrink while it is read (SIGBUS): the
 * loader maps it the same way, and packages and linkers replace a file by a new one, never
 * truncate the one in use. */
static int map_file(const char *path, struct mapped *m) {
	struct stat s;
	int fd = REAL(open)(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = -2;
	if (fstat(fd, &s) == 0 && S_ISREG(s.st_mode) && s.st_size > 0 && (uint64_t)s.st_size <= EXEC_FILE_MAX) {
		void *p = mmap(NULL, (size_t)s.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			m->p = p;
			m->len = (size_t)s.st_size;
			r = 0;
		}
	}
	REAL(close)(fd);
	return r;
}

/* scan reads one object: 0 when it imports nothing that keeps the library (its needed names added
 * to c), 1 when it keeps it (c->why set), -1 when the file cannot be opened. */
static int scan(const char *path, int how, struct closure *c) {
	struct mapped m;
	int r = map_file(path, &m);
	if (r == -1)
		return -1;
	if (r < 0) {
		c->why = "not a regular file";
		return 1;
	}
	const char *why = NULL;
	r = goxio_elf_scan(m.p, m.len, how, add_name, c, &why);
	if (r == GOXIO_ELF_KEEP) {
		/* why may point into the mapping, which goes now */
		const char *parts[] = {path, ": ", why};
		goxio_join(c->whybuf, sizeof c->whybuf, parts, 3);
		c->why = c->whybuf;
	}
	munmap((void *)m.p, m.len);
	return r == GOXIO_ELF_KEEP ? 1 : 0;
}

struct found {
	struct closure *c;
	int how;
	int keep; /* one of the paths keeps the library */
	int read; /* paths read (an entry of a stale cache may name a file that is gone) */
};

static int scan_found(void *ctx, const char *path) {
	struct found *f = ctx;
	int r = scan(path, f->how, f->c);
	f->read += r >= 0;
	f->keep |= r == 1;
	return r == 1; /* stop at the first that keeps it */
}

/* The loader's system directories for x86-64 Debian, after /etc/ld.so.cache. */
static const char *const system_dirs[] = {"/lib/x86_64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/lib64/",
					  "/usr/lib64/", "/lib/", "/usr/lib/"};

/* verdict decides for the program at path: SLOT_PRUNE or SLOT_KEEP, c->why set for the latter. Each
 * needed library is read at every path /etc/ld.so.cache gives for it (a hardware-capability
 * variant included), else at the first of the system directories that has it, as the loader
 * looks (a run path keeps the library, and so does LD_LIBRARY_PATH in decide()). */
static int verdict(const char *path, struct closure *c) {
	int r = scan(path, GOXIO_ELF_EXE, c);
	if (r != 0) {
		if (r < 0)
			c->why = "the program cannot be read";
		return SLOT_KEEP;
	}
	struct mapped cache = {NULL, 0};
	int cached = map_file("/etc/ld.so.cache", &cache) == 0;
	int v = SLOT_PRUNE;
	for (int i = 0; i < c->n && v == SLOT_PRUNE; i++) {
		const char *name = c->names[i]; /* scan appends names, never moves them */
		if (glibc_object(name))
			continue;
		struct found f = {c, local_only(name) ? GOXIO_ELF_NEEDS_ONLY : 0, 0, 0};
		int searched = strchr(name, '/') == NULL;
		if (!searched) {
			scan_found(&f, name);
		} else if (cached && goxio_ldcache_find(cache.p, cache.len, name, scan_found, &f) < 0 && !f.keep) {
			c->why = "/etc/ld.so.cache is not understood";
			v = SLOT_KEEP;
			continue;
		}
		for (size_t d = 0; searched && !f.keep && f.read == 0 && d < sizeof system_dirs / sizeof system_dirs[0]; d++) {
			char p[PATH_MAX];
			size_t dl = strlen(system_dirs[d]);
			memcpy(p, system_dirs[d], dl);
			memcpy(p + dl, name, strlen(name) + 1);
			scan_found(&f, p);
		}
		if (f.keep) {
			v = SLOT_KEEP;
		} else if (f.read == 0) {
			c->why = "a needed library is not in /etc/ld.so.cache or the system directories, or cannot be read";
			v = SLOT_KEEP;
		}
	}
	if (cached)
		munmap((void *)cache.p, cache.len);
	return v;
}

/* ---- the process ---- */

/* inet_survives reports whether fd is an AF_INET or AF_INET6 socket that stays open across exec. */
static int inet_survives(int fd) {
	struct stat st;
	int dom;
	socklen_t l = sizeof dom;
	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
		return 0;
	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) != 0 || (dom != AF_INET && dom != AF_INET6))
		return 0;
	int fl = REAL(fcntl)(fd, F_GETFD);
	return fl >= 0 && !(fl & FD_CLOEXEC);
}

/* inherits_inet reports whether the new program would inherit an inet socket: one of the fds below
 * EXEC_PROBE_FDS (one poll call tells which are open), or a higher one the fd table knows as a
 * socket of the program's (made or used under the library in this process image). */
static int inherits_inet(void) {
	struct pollfd p[EXEC_PROBE_FDS];
	for (int i = 0; i < EXEC_PROBE_FDS; i++)
		p[i] = (struct pollfd){.fd = i, .events = 0};
	if (REAL(poll)(p, EXEC_PROBE_FDS, 0) < 0)
		return 1;
	for (int i = 0; i < EXEC_PROBE_FDS; i++)
		if (!(p[i].revents & POLLNVAL) && inet_survives(i))
			return 1;
	/* The library's own fds sit near the soft fd limit (up to a million): the table is read
	 * eight entries at a time, up to EXEC_TABLE_FDS. */
	int high = goxio_fdt_high();
	if (high >= EXEC_TABLE_FDS)
		high = EXEC_TABLE_FDS - 1;
	for (int fd = EXEC_PROBE_FDS; fd <= high;) {
		uint64_t w;
		if ((fd & 7) == 0 && fd + 8 <= high + 1) {
			memcpy(&w, (const void *)&goxio_fdt[fd], sizeof w); /* racy reads: a hint, rechecked below */
			if (w == 0) {
				fd += 8;
				continue;
			}
		}
		uint8_t fl = goxio_fd_flags(fd);
		if (fl != 0 && !(fl & GOXIO_FD_INTERNAL) && inet_survives(fd))
			return 1;
		fd++;
	}
	return 0;
}

static const char *env_value(char *const envp[], const char *key, size_t kl) {
	for (size_t i = 0; envp[i] != NULL; i++)
		if (strncmp(envp[i], key, kl) == 0 && envp[i][kl] == '=')
			return envp[i] + kl + 1;
	return NULL;
}

/* only_this_library reports whether the LD_PRELOAD value v names this library and nothing else
 * (entries are separated by spaces or colons; a path, or a file name searched for). */
static int only_this_library(const char *v) {
	const char *self = goxio_self_name();
	if (self == NULL || *self == 0)
		return 0;
	/* An entry without a slash was searched for, and the loader names the library by the path
	 * it found: compare the file name then. */
	const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
	int seen = 0;
	while (*v != 0) {
		size_t l = strcspn(v, " :");
		if (l > 0) {
			const char *want = memchr(v, '/', l) ? self : base;
			if (l != strlen(want) || strncmp(v, want, l) != 0)
				return 0;
			seen = 1;
		}
		v += l + (v[l] != 0);
	}
	return seen;
}

static int trace_on(void) {
	const char *t = getenv("VMA_TRACELEVEL");
	if (t == NULL)
		return 0;
	if (*t >= '0' && *t <= '9')
		return *t >= '5' || t[1] != 0;
	return strcasecmp(t, "debug") == 0 || strcasecmp(t, "fine") == 0 || strcasecmp(t, "func") == 0 ||
	       strcasecmp(t, "finer") == 0 || strcasecmp(t, "func_all") == 0;
}

static void trace(const char *path, int prune, const char *why) {
	if (!trace_on())
		return;
	const char *parts[] = {"goxio: exec ", path, prune ? ": without the library (it cannot use a socket)\n" : ": with the library (",
			       prune ? "" : why, prune ? "" : ")\n"};
	goxio_say_parts(parts, sizeof parts / sizeof parts[0]);
}

/* decide reports whether path may start without the library, given its new environment. */
static int decide(const char *path, char *const envp[]) {
	const char *pre = env_value(envp, "LD_PRELOAD", 10);
	if (pre == NULL || !only_this_library(pre))
		return 0;
	const char *all = env_value(envp, "GOXIO_PRELOAD_ALL", 17);
	if (all != NULL && strcmp(all, "0") != 0 && *all != 0) {
		trace(path, 0, "GOXIO_PRELOAD_ALL");
		return 0;
	}
	const char *llp = env_value(envp, "LD_LIBRARY_PATH", 15);
	if (llp != NULL && *llp != 0) {
		trace(path, 0, "LD_LIBRARY_PATH is set");
		return 0;
	}
	if (inherits_inet()) {
		trace(path, 0, "it inherits an inet socket");
		return 0;
	}
	struct stat st;
	if (stat(path, &st) != 0)
		return 0; /* the exec fails anyway */
	int v = slot_find(&st);
	if (v == SLOT_PRUNE) {
		trace(path, 1, NULL);
		return 1;
	}
	struct closure c;
	c.n = 0;
	c.why = "an earlier look";
	if (v == SLOT_EMPTY) {
		v = verdict(path, &c);
		slot_put(&st, (uint32_t)v);
	}
	trace(path, v == SLOT_PRUNE, c.why);
	return v == SLOT_PRUNE;
}

int execve(const char *path, char *const argv[], char *const envp[]) {
	int saved = errno;
	if (envp != NULL && REAL(execve) != NULL) {
		size_t n = 0;
		while (n <= EXEC_MAX_ENV && envp[n] != NULL)
			n++;
		if (n <= EXEC_MAX_ENV && decide(path, envp)) {
			char *env[EXEC_MAX_ENV + 1];
			size_t k = 0;
			for (size_t i = 0; i < n; i++)
				if (strncmp(envp[i], "LD_PRELOAD=", 11) != 0)
					env[k++] = envp[i];
			env[k] = NULL;
			errno = saved;
			return REAL(execve)(path, argv, env);
		}
	}
	errno = saved;
	return REAL(execve)(path, argv, envp);
}

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

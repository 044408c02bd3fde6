/*
 * lazy_listen.c: a listener of a process without its engine yet, published in the discovery
 * directory from C.
 *
 * With the engine on demand, an event-loop server (redis, memcached, Node, asyncio, iperf3's
 * server) has no engine while only its listener is in its wait set; the first clients connect
 * then, and their engines look the listener up in the discovery directory (offload/tcppeer.go):
 * without an entry they keep their connections on the kernel for good. So listen() on a lazy
 * AF_INET/AF_INET6 TCP socket (or the first wait on one a forked child inherited) writes the
 * listener's entry itself, flagged GOXIO_DIR_F_LAZY, into `<GOXIO_SHM_DIR>/goxio.<euid>.<netns>.dir`
 * with the Go writer's protocol (offload/discovery: the file made complete and linked into place,
 * mode 0600; slots claimed with the per-entry seqlock, owner word written last; dir_layout.h holds
 * the layout, checked against the Go definitions by a Go test). A client that finds it pairs as
 * with any goxio listener; this process's engine attaches when it loads at the accepted
 * connection's first data call (a creator whose peer never attaches withdraws: shmtcp/doc.go).
 *
 * Lifetime: the entry is this process's (pid and start time: a dead owner's entries are swept by
 * any engine). It is withdrawn when its fd is closed or replaced (goxio_fd_gone), when the engine
 * cannot be loaded, and right after the engine adopted the fd unless the engine took it over
 * (discovery.Dir.TakeOverListener rewrites it in place without the lazy flag: no gap, no
 * duplicate). One fd holds the entry; a dup of it does not (closing the dup leaves it).
 *
 * Nothing here may break the program's listen(): any failure (no directory, a full file system, a
 * corrupt or foreign segment, a full table, too many listeners) skips the publication silently,
 * and the listener's connections then stay on the kernel as before. Never in a signal handler, a
 * vfork child, or a process whose engine is loaded or loading (the engine publishes there).
 */
#include "preload.h"
#include "dir_layout.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

GOXIO_HIDDEN int goxio_engine_absent(void);

/* ---- atomics: sequentially consistent, as Go's sync/atomic ---- */

static inline uint64_t ld(volatile uint64_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline void st(volatile uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
static inline int cas(volatile uint64_t *p, uint64_t old, uint64_t new) {
	return __atomic_compare_exchange_n(p, &old, new, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* ---- the process: pid, start time, parameters ---- */

/* self_start returns this process's start time (field 22 of /proc/self/stat), read once per pid. */
static int self_start(pid_t pid, uint64_t *out) {
	static volatile pid_t cached_pid;
	static volatile uint64_t cached;
	if (__atomic_load_n(&cached_pid, __ATOMIC_ACQUIRE) == pid) {
		*out = __atomic_load_n(&cached, __ATOMIC_RELAXED);
		return 0;
	}
	char buf[1024];
	int fd = REAL(open)("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	for (;;) {
		ssize_t r = REAL(read)(fd, buf + n, sizeof buf - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == sizeof buf - 1)
			break;
	}
	REAL(close)(fd);
	buf[n] = 0;
	/* The command (field 2) may hold spaces and parentheses: fields 3.. follow the last ')'. */
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return -1;
	p++;
	for (int field = 3; field < 22; field++) {
		while (*p == ' ')
			p++;
		while (*p != ' ' && *p != 0)
			p++;
		if (*p == 0)
			return -1;
	}
	while (*p == ' ')
		p++;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (end == p || errno != 0)
		return -1;
	__atomic_store_n(&cached, (uint64_t)v, __ATOMIC_RELAXED);
	__atomic_store_n(&cached_pid, pid, __ATOMIC_RELEASE);
	*out = v;
	return 0;
}

/* env_bool reads a boolean parameter as conf's parseBool does (an integer, 0 false; true/false,
 * yes/no, on/off, enable(d)/disable(d)); def when unset or unreadable (conf warns and keeps the
 * default). */
static int env_bool(const char *name, int def) {
	const char *v = getenv(name);
	if (v == NULL)
		return def;
	while (*v == ' ' || *v == '\t')
		v++;
	char s[16];
	size_t n = 0;
	while (v[n] != 0 && v[n] != ' ' && v[n] != '\t' && n < sizeof s - 1) {
		s[n] = v[n];
		n++;
	}
	s[n] = 0;
	static const char *const yes[] = {"true", "yes", "on", "enable", "enabled"};
	static const char *const no[] = {"false", "no", "off", "disable", "disabled"};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return 1;
		if (strcasecmp(s, no[i]) == 0)
			return 0;
	}
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (n == 0 || *end != 0 || errno != 0)
		return def;
	return x != 0;
}

/* shm_tcp_wanted reports whether this process's engine would serve TCP through shared memory, as
 * far as the environment tells (a parameters file may say otherwise: then yes, and the engine
 * withdraws the entry when it loads with the transport off). */
static int shm_tcp_wanted(void) {
	const char *file = getenv("GOXIO_PARAMS_FILE");
	int unknown = file != NULL && file[0] != 0;
	const char *xdp = getenv("GOXIO_XDP");
	int shm_default = xdp != NULL && xdp[0] != 0 ? 0 : GOXIO_DIR_SHM_DEFAULT; /* conf: derived from GOXIO_XDP */
	int shm = env_bool("GOXIO_SHM", unknown ? 1 : shm_default);
	int tcp = env_bool("GOXIO_SHM_TCP", unknown ? 1 : GOXIO_DIR_SHM_TCP_DEFAULT);
	return shm && tcp;
}

/* ---- entries (offload/discovery: publish.go, seqlock.go, entry.go) ---- */

static inline volatile uint64_t *slot_of(volatile uint64_t *mem, int i) {
	return mem + GOXIO_DIR_HEADER_WORDS + (size_t)i * GOXIO_DIR_ENTRY_WORDS;
}

/* lock_held is the lock word a writer holds after taking it from the even value l. */
static inline uint64_t lock_held(uint64_t l, pid_t pid) {
	return (uint64_t)(uint32_t)pid << 32 | (uint64_t)(uint32_t)((uint32_t)l + 1);
}

/* unlock publishes the writes made under the held lock: the next even sequence, no holder. */
static inline void unlock(volatile uint64_t *s, uint64_t held) {
	st(&s[GOXIO_DIR_E_LOCK], (uint64_t)(uint32_t)((uint32_t)held + 1));
}

static inline void bump_gen(volatile uint64_t *mem) { __atomic_add_fetch(&mem[GOXIO_DIR_H_GEN], 1, __ATOMIC_SEQ_CST); }

static void raise_high(volatile uint64_t *mem, uint64_t n) {
	for (;;) {
		uint64_t h = ld(&mem[GOXIO_DIR_H_HIGH]);
		if (h >= n || cas(&mem[GOXIO_DIR_H_HIGH], h, n))
			return;
	}
}

/* le64 reads 8 bytes as a little-endian word (the layout is little-endian on every host). */
static uint64_t le64(const uint8_t *b) {
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* encode fills words 1.. of a listener entry for the bound address sa, as discovery's encode
 * does for ListenerEntry (with V6Only and the lazy flag); the claim word is left for the claim. */
static int encode(uint64_t w[GOXIO_DIR_ENTRY_WORDS], const struct sockaddr_storage *sa, int v6only, pid_t pid,
		  uint64_t start, uid_t uid) {
	memset(w, 0, sizeof(uint64_t) * GOXIO_DIR_ENTRY_WORDS);
	uint64_t flags = GOXIO_DIR_F_STREAM | GOXIO_DIR_F_LAZY, kind, port;
	int family = sa->ss_family;
	if (family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
		uint8_t b[8] = {0};
		memcpy(b, &a->sin_addr, 4);
		w[GOXIO_DIR_E_LOCAL] = le64(b);
		kind = GOXIO_DIR_KIND4;
		port = ntohs(a->sin_port);
	} else if (family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
		w[GOXIO_DIR_E_LOCAL] = le64(a->sin6_addr.s6_addr);
		w[GOXIO_DIR_E_LOCAL + 1] = le64(a->sin6_addr.s6_addr + 8);
		kind = GOXIO_DIR_KIND6;
		port = ntohs(a->sin6_port);
		if (v6only)
			flags |= GOXIO_DIR_F_V6ONLY;
	} else {
		return -1;
	}
	if (port == 0)
		return -1;
	char label[GOXIO_DIR_MAX_INBOX + 1] = {0};
	int n = snprintf(label, sizeof label, "goxio.%u.tcp.%d", (unsigned)uid, (int)pid);
	if (n <= 0 || n > GOXIO_DIR_MAX_INBOX)
		return -1;
	uint8_t name[64] = {0};
	memcpy(name, label, (size_t)n);
	for (int i = 0; i < 8; i++)
		w[GOXIO_DIR_E_INBOX + i] = le64(name + 8 * i);
	w[GOXIO_DIR_E_OWNER] = (uint64_t)(uint32_t)pid | flags << 32;
	w[GOXIO_DIR_E_START] = start;
	w[GOXIO_DIR_E_META] = (uint64_t)(uint8_t)family | (uint64_t)n << 8 | port << 16 | kind << 48;
	return 0;
}

static unsigned claim_hint;

/* claim takes a free slot and writes w into it (owner word last); the slot, or -1 when the
 * table has no free slot. */
static int claim(volatile uint64_t *mem, uint64_t w[GOXIO_DIR_ENTRY_WORDS], pid_t pid) {
	unsigned first = __atomic_load_n(&claim_hint, __ATOMIC_RELAXED) % GOXIO_DIR_ENTRIES;
	for (unsigned k = 0; k < GOXIO_DIR_ENTRIES; k++) {
		int i = (int)((first + k) % GOXIO_DIR_ENTRIES);
		volatile uint64_t *s = slot_of(mem, i);
		uint64_t l = ld(&s[GOXIO_DIR_E_LOCK]);
		if (((uint32_t)l & 1) != 0 || (uint32_t)ld(&s[GOXIO_DIR_E_OWNER]) != 0)
			continue;
		uint64_t held = lock_held(l, pid);
		if (!cas(&s[GOXIO_DIR_E_LOCK], l, held))
			continue;
		if ((uint32_t)ld(&s[GOXIO_DIR_E_OWNER]) != 0) {
			unlock(s, held); /* claimed and released by someone else between our loads */
			continue;
		}
		w[GOXIO_DIR_E_CLAIM] = __atomic_add_fetch(&mem[GOXIO_DIR_H_CLAIM], 1, __ATOMIC_SEQ_CST);
		for (int j = GOXIO_DIR_E_START; j < GOXIO_DIR_ENTRY_WORDS; j++)
			st(&s[j], w[j]);
		st(&s[GOXIO_DIR_E_OWNER], w[GOXIO_DIR_E_OWNER]);
		unlock(s, held);
		raise_high(mem, (uint64_t)i + 1);
		__atomic_store_n(&claim_hint, (unsigned)i + 1, __ATOMIC_RELAXED);
		bump_gen(mem);
		return i;
	}
	return -1;
}

/* withdraw frees slot i if it still holds this process's lazy entry with that claim (the engine
 * took it over otherwise, or a sweeper freed it). */
static void withdraw(volatile uint64_t *mem, int i, pid_t pid, uint64_t start, uint64_t claimed) {
	volatile uint64_t *s = slot_of(mem, i);
	uint64_t held = 0;
	int locked = 0;
	for (int try = 0; try < GOXIO_DIR_LOCK_TRIES && !locked; try++) {
		uint64_t l = ld(&s[GOXIO_DIR_E_LOCK]);
		if (((uint32_t)l & 1) == 0) {
			held = lock_held(l, pid);
			locked = cas(&s[GOXIO_DIR_E_LOCK], l, held);
		}
		if (!locked && try % 64 == 63)
			sched_yield();
	}
	if (!locked)
		return;
	uint64_t owner = ld(&s[GOXIO_DIR_E_OWNER]);
	if ((uint32_t)owner == (uint32_t)pid && (owner >> 32 & GOXIO_DIR_F_LAZY) != 0 &&
	    ld(&s[GOXIO_DIR_E_START]) == start && ld(&s[GOXIO_DIR_E_CLAIM]) == claimed) {
		st(&s[GOXIO_DIR_E_OWNER], 0); /* a free slot is recognised by it: first */
		for (int j = GOXIO_DIR_E_START; j < GOXIO_DIR_ENTRY_WORDS; j++)
			st(&s[j], 0);
		unlock(s, held);
		bump_gen(mem);
		return;
	}
	unlock(s, held);
}

/* ---- which fd holds which entry ---- */

#define MAX_RECS 64
#define REC_BUSY (~(uint64_t)0)

/* rec: the entry fd (key - 1) published; key 0 is a free record, REC_BUSY one being changed. */
struct rec {
	volatile uint64_t key;
	volatile uint64_t *mem;
	int slot;
	pid_t pid;
	uint64_t start;
	uint64_t claim;
};

GOXIO_COLD static struct rec recs[MAX_RECS];
static volatile int nrecs; /* records in use: goxio_lazy_listen_gone looks only when not zero */

/* take finds fd's record and makes it busy; NULL when fd has none. */
static struct rec *take(int fd) {
	uint64_t key = (uint64_t)fd + 1;
	for (int i = 0; i < MAX_RECS; i++)
		if (__atomic_load_n(&recs[i].key, __ATOMIC_ACQUIRE) == key && cas(&recs[i].key, key, REC_BUSY))
			return &recs[i];
	return NULL;
}

/* drop releases fd's record, withdrawing its entry when this process published it and it is
 * still the lazy one. */
static void drop(int fd) {
	if (__atomic_load_n(&nrecs, __ATOMIC_ACQUIRE) == 0)
		return;
	struct rec *r = take(fd);
	if (r == NULL)
		return;
	if (r->pid == getpid())
		withdraw(r->mem, r->slot, r->pid, r->start, r->claim);
	__atomic_sub_fetch(&nrecs, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r->key, 0, __ATOMIC_RELEASE);
}

void goxio_lazy_listen(int fd) {
	if (goxio_sig_depth > 0 || !goxio_engine_absent() || !(goxio_fd_flags(fd) & GOXIO_FD_LAZY) || !shm_tcp_wanted())
		return;
	int saved = errno;
	pid_t pid = getpid();
	uint64_t start;
	struct sockaddr_storage sa;
	socklen_t len = sizeof sa;
	int v6only = 0;
	if (self_start(pid, &start) != 0 || REAL(getsockname)(fd, (struct sockaddr *)&sa, &len) != 0)
		goto out;
	if (sa.ss_family == AF_INET6) {
		socklen_t l = sizeof v6only;
		if (REAL(getsockopt)(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &l) != 0)
			goto out;
	}
	uint64_t w[GOXIO_DIR_ENTRY_WORDS];
	if (encode(w, &sa, v6only, pid, start, geteuid()) != 0)
		goto out;
	/* One entry per listening socket of this process: an fd that has one keeps it (a second
	 * listen only changes the backlog); one a forked child inherited is the parent's. */
	struct rec *r = take(fd);
	if (r != NULL) {
		if (r->pid == pid) {
			__atomic_store_n(&r->key, (uint64_t)fd + 1, __ATOMIC_RELEASE);
			goto out;
		}
		__atomic_sub_fetch(&nrecs, 1, __ATOMIC_RELEASE);
	} else {
		for (int i = 0; i < MAX_RECS && r == NULL; i++)
			if (cas(&recs[i].key, 0, REC_BUSY))
				r = &recs[i];
		if (r == NULL)
			goto out; /* too many listeners: this one's connections stay on the kernel */
	}
	volatile uint64_t *mem = goxio_dir_map(1);
	int slot = mem != NULL ? claim(mem, w, pid) : -1;
	if (slot < 0) {
		__atomic_store_n(&r->key, 0, __ATOMIC_RELEASE);
		goto out;
	}
	r->mem = mem;
	r->slot = slot;
	r->pid = pid;
	r->start = start;
	r->claim = w[GOXIO_DIR_E_CLAIM];
	__atomic_add_fetch(&nrecs, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r->key, (uint64_t)fd + 1, __ATOMIC_SEQ_CST);
	/* The engine may have been loaded by another thread meanwhile and adopted fd before the
	 * record existed: nobody else would withdraw the entry then. */
	if (!(goxio_fd_flags(fd) & GOXIO_FD_LAZY))
		drop(fd);
out:
	errno = saved;
}

void goxio_lazy_listen_gone(int fd) {
	if (goxio_in_vfork())
		return; /* the records are the parent's (a vfork child that calls exit runs the destructor) */
	int saved = errno;
	drop(fd);
	errno = saved;
}

/* At exit the process's entries go at once (the sweep of dead owners would remove them later). */
__attribute__((destructor)) static void lazy_listen_exit(void) {
	if (__atomic_load_n(&nrecs, __ATOMIC_ACQUIRE) == 0)
		return;
	for (int i = 0; i < MAX_RECS; i++) {
		uint64_t key = __atomic_load_n(&recs[i].key, __ATOMIC_ACQUIRE);
		if (key != 0 && key != REC_BUSY)
			goxio_lazy_listen_gone((int)(key - 1));
	}
}

/*
 * dir_map.c: the discovery directory's segment, mapped by the preload library.
 *
 * `<GOXIO_SHM_DIR>/goxio.<euid>.<netns>.dir` (layout in dir_layout.h; offload/discovery is the
 * reference, internal/shmseg the file protocol): lazy_listen.c writes listeners' entries into it
 * and lazy_ksend.c reads it, both for a process whose engine is not loaded. A mapping is never
 * unmapped: the engine's C side may keep pointers into it (the generation word) for the
 * process's life.
 */
#include "preload.h"
#include "dir_layout.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_WORDS ((size_t)GOXIO_DIR_HEADER_WORDS + (size_t)GOXIO_DIR_ENTRIES * GOXIO_DIR_ENTRY_WORDS)
#define DIR_BYTES (DIR_WORDS * 8)
#define VERSION_WORD ((uint64_t)GOXIO_DIR_VERSION | (uint64_t)GOXIO_DIR_ENTRY_WORDS << 32)

static inline uint64_t ld(volatile uint64_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline void st(volatile uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

/* A mapping of the directory of one user, namespace and folder (a process that changes its
 * network namespace or user maps the new one; the old stays mapped for the entries in it). */
struct dirmap {
	volatile uint64_t *mem;
	uint64_t ns;
	uid_t uid;
	char path[PATH_MAX];
};

static struct dirmap *cur_map;

/* valid_header checks a mapped segment's header as offload/discovery's Open does. */
static int valid_header(volatile uint64_t *mem) {
	return ld(&mem[GOXIO_DIR_H_MAGIC]) == GOXIO_DIR_MAGIC && ld(&mem[GOXIO_DIR_H_VERSION]) == VERSION_WORD &&
	       ld(&mem[GOXIO_DIR_H_ENTRIES]) == GOXIO_DIR_ENTRIES &&
	       ld(&mem[GOXIO_DIR_H_HEADER_WORDS]) == GOXIO_DIR_HEADER_WORDS;
}

/* open_existing maps path if it is a private regular file of ours of the right size and header
 * (internal/shmseg.Open); NULL with errno ENOENT when there is none. */
static volatile uint64_t *open_existing(const char *path) {
	int fd = REAL(open)(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0 &&
	    st.st_size == (off_t)DIR_BYTES)
		m = mmap(NULL, DIR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	REAL(close)(fd);
	if (m == MAP_FAILED) {
		errno = EINVAL;
		return NULL;
	}
	if (!valid_header(m)) {
		munmap(m, DIR_BYTES);
		errno = EINVAL;
		return NULL;
	}
	return m;
}

/* fill makes fd private, reserves the segment's space (a full file system fails now, not with a
 * SIGBUS later) and writes the header, magic last (internal/shmseg.CreateLinked). */
static int fill(int fd) {
	if (fchmod(fd, 0600) != 0)
		return -1;
	int r;
	do
		r = fallocate(fd, 0, 0, (off_t)DIR_BYTES);
	while (r != 0 && errno == EINTR);
	if (r != 0 && (errno == EOPNOTSUPP || errno == ENOSYS))
		r = ftruncate(fd, (off_t)DIR_BYTES);
	if (r != 0)
		return -1;
	volatile uint64_t *mem = mmap(NULL, DIR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if ((void *)mem == MAP_FAILED)
		return -1;
	st(&mem[GOXIO_DIR_H_VERSION], VERSION_WORD);
	st(&mem[GOXIO_DIR_H_ENTRIES], GOXIO_DIR_ENTRIES);
	st(&mem[GOXIO_DIR_H_HEADER_WORDS], GOXIO_DIR_HEADER_WORDS);
	st(&mem[GOXIO_DIR_H_MAGIC], GOXIO_DIR_MAGIC);
	munmap((void *)mem, DIR_BYTES);
	return 0;
}

/* create builds a complete segment in an unnamed file (or a named temporary one where O_TMPFILE
 * is not supported) and links it at path; EEXIST when another process linked one first. */
static int create(const char *dir, const char *path) {
	int fd = REAL(open)(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	char tmp[PATH_MAX + 32];
	tmp[0] = 0;
	if (fd < 0) {
		if (snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof tmp)
			return -1;
		unlink(tmp);
		fd = REAL(open)(tmp, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -1;
	}
	int r = fill(fd);
	if (r == 0) {
		if (tmp[0] != 0) {
			r = link(tmp, path);
		} else {
			char self[64];
			snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
			r = linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
		}
	}
	int saved = errno;
	REAL(close)(fd);
	if (tmp[0] != 0)
		unlink(tmp);
	errno = saved;
	return r;
}

volatile uint64_t *goxio_dir_map(int make) {
	const char *dir = getenv("GOXIO_SHM_DIR");
	if (dir == NULL || dir[0] != '/')
		dir = GOXIO_DIR_DEFAULT_DIR;
	struct stat nsst;
	if (stat("/proc/self/ns/net", &nsst) != 0)
		return NULL;
	uid_t uid = geteuid();
	char path[PATH_MAX];
	size_t dl = strlen(dir);
	const char *sep = dl > 0 && dir[dl - 1] == '/' ? "" : "/";
	if (snprintf(path, sizeof path, "%s%sgoxio.%u.%llu.dir", dir, sep, (unsigned)uid,
		     (unsigned long long)nsst.st_ino) >= (int)sizeof path)
		return NULL;
	struct dirmap *m = __atomic_load_n(&cur_map, __ATOMIC_ACQUIRE);
	if (m != NULL && m->ns == nsst.st_ino && m->uid == uid && strcmp(m->path, path) == 0)
		return m->mem;
	volatile uint64_t *mem = NULL;
	for (int attempt = 0; attempt < 4 && mem == NULL; attempt++) {
		mem = open_existing(path);
		if (mem == NULL && errno != ENOENT)
			return NULL;
		if (mem == NULL && (!make || (create(dir, path) != 0 && errno != EEXIST)))
			return NULL;
	}
	if (mem == NULL)
		return NULL;
	struct dirmap *n = malloc(sizeof *n);
	if (n == NULL) {
		munmap((void *)mem, DIR_BYTES);
		return NULL;
	}
	n->mem = mem;
	n->ns = nsst.st_ino;
	n->uid = uid;
	strcpy(n->path, path);
	/* Another thread may have mapped it meanwhile: both mappings stay valid (the same file). */
	__atomic_store_n(&cur_map, n, __ATOMIC_RELEASE);
	return mem;
}

/*
 * goxio: the command's front end. `goxio run` is served here, in C, and every other command by
 * the Go tool (goxio-tool, next to this program or in ../lib/goxio), which this program execs with
 * the same arguments.
 *
 * Why C: `goxio run` starts every program a user accelerates, and scripts run it per command. A
 * Go program's start-up is its runtime's (heap arenas, threads, package initialisers): ~0.3 ms on
 * a machine with cheap page faults, but ~300-480 page faults, and on a VM where a fault costs
 * 12 us (this project's CI machine) 9-14 ms against 3 ms for a C program. The front end makes
 * `goxio run` cost what an exec costs; the commands that inspect things (rules, params, capture,
 * doctor) keep Go and its libraries.
 *
 * `goxio run [-p PROFILE] [--lib PATH] [--] COMMAND [ARG...]`: prepends the library to LD_PRELOAD,
 * sets VMA_SPEC when a profile is given, says once on stderr when the program cannot be
 * accelerated (static, Go, another ELF class or machine, set-user-ID), and execs the program (same
 * pid, same signals). Flags follow Go's flag package (-x or --x, a value as -x=v or -x v), as the
 * other commands' do.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIB_NAME "libgoxio.so"
#define ENGINE_NAME "libgoxio-engine.so"
#define TOOL_NAME "goxio-tool"

/* The VMA_SPEC profiles: canonical name and VMA's number for it. The list is conf's (specs in
 * conf/params_spec.go); cmd/goxio's TestRunProfilesMatchConf fails when the two differ. */
static const struct {
	const char *name, *alias;
} profiles[] = {
	{"none", "0"},		{"ultra-latency", "10"}, {"latency", "15"}, {"multi_ring_latency", NULL},
	{"29west", "29"},	{"wombat_fh", "554"},	 {"mcd", "623"},    {"mcd-irq", "624"},
	{"rti", "784"},		{"7750", NULL},
};

static const char usage[] = "usage: goxio run [-p PROFILE] [--lib PATH] -- COMMAND [ARG...]\n"
			    "  -lib string\n"
			    "    \tpath of libgoxio.so (default: $GOXIO_LIB, next to goxio, ../lib, /usr/local/lib, "
			    "/usr/lib)\n"
			    "  -p string\n"
			    "    \tVMA_SPEC profile for the program (latency, multi_ring_latency, ...)\n";

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fputs("goxio: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static char *join3(const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
	char *s = xmalloc(la + lb + lc + 1);
	memcpy(s, a, la);
	memcpy(s + la, b, lb);
	memcpy(s + la + lb, c, lc + 1);
	return s;
}

static int is_regular(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* exe_dir returns the directory of this program, symbolic links resolved, or NULL. */
static char *exe_dir(void)
{
	char *exe = realpath("/proc/self/exe", NULL);
	if (!exe)
		return NULL;
	char *slash = strrchr(exe, '/');
	if (slash == exe)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	return exe;
}

/* clean_abs makes path absolute (against the working directory) and lexically clean, as Go's
 * filepath.Abs does: no symbolic link is resolved, so LD_PRELOAD names the path the user gave. */
static char *clean_abs(const char *path)
{
	char *full;
	if (path[0] == '/') {
		full = strdup(path);
	} else {
		char *cwd = getcwd(NULL, 0);
		if (!cwd)
			return strdup(path);
		full = join3(cwd, "/", path);
		free(cwd);
	}
	if (!full)
		return NULL;
	/* Walk the components, keeping a stack of kept ones in out. */
	char *out = xmalloc(strlen(full) + 2);
	size_t n = 0;
	char *save = NULL;
	for (char *c = strtok_r(full, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--; /* the slash before the dropped component */
			continue;
		}
		out[n++] = '/';
		size_t l = strlen(c);
		memcpy(out + n, c, l);
		n += l;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = 0;
	free(full);
	return out;
}

/* find_library looks for the library as the Go tool did: $GOXIO_LIB, next to goxio, ../lib
 * relative to it, then the installed places; NULL with every place it looked in tried. */
static char *find_library(char *tried, size_t cap)
{
	const char *cands[5];
	char *owned[2] = {NULL, NULL};
	int n = 0;
	const char *v = getenv("GOXIO_LIB");
	if (v && *v)
		cands[n++] = v;
	char *dir = exe_dir();
	if (dir) {
		owned[0] = join3(dir, "/", LIB_NAME);
		owned[1] = join3(dir, "/../lib/", LIB_NAME);
		cands[n++] = owned[0];
		cands[n++] = owned[1];
		free(dir);
	}
	cands[n++] = "/usr/local/lib/" LIB_NAME;
	cands[n++] = "/usr/lib/" LIB_NAME;
	tried[0] = 0;
	for (int i = 0; i < n; i++) {
		if (is_regular(cands[i])) {
			char *found = strdup(cands[i]);
			free(owned[0]);
			free(owned[1]);
			return found;
		}
		size_t l = strlen(tried);
		snprintf(tried + l, cap - l, "%s%s", l ? ", " : "", cands[i]);
	}
	free(owned[0]);
	free(owned[1]);
	return NULL;
}

/* prepend_preload puts lib first in an LD_PRELOAD value (items separated by colons or blanks),
 * removing any other occurrence of it. */
static char *prepend_preload(const char *lib, const char *old)
{
	size_t cap = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *out = xmalloc(cap);
	strcpy(out, lib);
	if (!old)
		return out;
	char *copy = strdup(old), *save = NULL;
	if (!copy)
		return out;
	for (char *it = strtok_r(copy, ": \t", &save); it; it = strtok_r(NULL, ": \t", &save)) {
		if (strcmp(it, lib) == 0)
			continue;
		strcat(out, ":");
		strcat(out, it);
	}
	free(copy);
	return out;
}

/* executable reports whether a file may be exec'd, as Go's exec.LookPath judges it. */
static int executable(const struct stat *st) { return !S_ISDIR(st->st_mode) && (st->st_mode & 0111); }

/* look_path finds prog as Go's exec.LookPath does: a name with a slash is taken as is, others
 * are searched in $PATH (an empty entry is the working directory). st gets the file's stat. */
static char *look_path(const char *prog, struct stat *st, char *err, size_t cap)
{
	if (strchr(prog, '/')) {
		if (stat(prog, st) != 0) {
			snprintf(err, cap, "exec: \"%s\": stat %s: %s", prog, prog, strerror(errno));
			return NULL;
		}
		if (!executable(st)) {
			snprintf(err, cap, "exec: \"%s\": permission denied", prog);
			return NULL;
		}
		return strdup(prog);
	}
	const char *path = getenv("PATH");
	if (path) {
		char *copy = strdup(path);
		char *p = copy;
		while (p) {
			char *colon = strchr(p, ':');
			if (colon)
				*colon = 0;
			char *cand = join3(*p ? p : ".", "/", prog);
			if (stat(cand, st) == 0 && executable(st)) {
				free(copy);
				return cand;
			}
			free(cand);
			p = colon ? colon + 1 : NULL;
		}
		free(copy);
	}
	snprintf(err, cap, "exec: \"%s\": executable file not found in $PATH", prog);
	return NULL;
}

/* elf_info is what check_program needs to know of an ELF file. */
struct elf_info {
	int ok;
	unsigned char cls;
	unsigned machine;
	int dynamic; /* has PT_INTERP */
	int is_go;   /* has a .go.buildinfo section */
};

static int read_at(int fd, void *buf, size_t n, off_t off) { return pread(fd, buf, n, off) == (ssize_t)n; }

/* ehdr is the part of an ELF header read_elf uses, of either class. */
struct ehdr {
	unsigned machine;
	off_t phoff, shoff;
	unsigned phentsize, phnum, shentsize, shnum, shstrndx;
};

static int read_ehdr(int fd, unsigned char cls, struct ehdr *h)
{
	if (cls == ELFCLASS64) {
		Elf64_Ehdr e;
		if (!read_at(fd, &e, sizeof e, 0))
			return 0;
		*h = (struct ehdr){e.e_machine, e.e_phoff, e.e_shoff, e.e_phentsize, e.e_phnum, e.e_shentsize, e.e_shnum, e.e_shstrndx};
		return 1;
	}
	Elf32_Ehdr e;
	if (!read_at(fd, &e, sizeof e, 0))
		return 0;
	*h = (struct ehdr){e.e_machine, e.e_phoff, e.e_shoff, e.e_phentsize, e.e_phnum, e.e_shentsize, e.e_shnum, e.e_shstrndx};
	return 1;
}

/* read_table reads n entries of size bytes at off (one pread); NULL when it cannot or when the
 * table is implausibly large. The caller frees it. */
static unsigned char *read_table(int fd, off_t off, size_t n, size_t size)
{
	if (n == 0 || size == 0 || n * size > (1u << 20))
		return NULL;
	unsigned char *buf = malloc(n * size);
	if (buf && !read_at(fd, buf, n * size, off)) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

/* shdr_at decodes section header i of a table read whole: name index, file offset and size. */
static int shdr_at(const unsigned char *tab, unsigned char cls, const struct ehdr *h, unsigned i, unsigned *name, off_t *off,
		   uint64_t *size)
{
	const unsigned char *p = tab + (size_t)i * h->shentsize;
	if (cls == ELFCLASS64) {
		Elf64_Shdr sh;
		if (h->shentsize < sizeof sh)
			return 0;
		memcpy(&sh, p, sizeof sh);
		*name = sh.sh_name, *off = (off_t)sh.sh_offset, *size = sh.sh_size;
		return 1;
	}
	Elf32_Shdr sh;
	if (h->shentsize < sizeof sh)
		return 0;
	memcpy(&sh, p, sizeof sh);
	*name = sh.sh_name, *off = (off_t)sh.sh_offset, *size = sh.sh_size;
	return 1;
}

/* read_elf reads the ELF header, program headers and section names of path (64- or 32-bit, this
 * machine's byte order, which the loader requires anyway) in a few preads. Not ELF (a script):
 * ok = 0. */
static struct elf_info read_elf(const char *path)
{
	static const char go_section[] = ".go.buildinfo";
	struct elf_info in = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return in;
	unsigned char ident[EI_NIDENT];
	struct ehdr h;
	if (!read_at(fd, ident, sizeof ident, 0) || memcmp(ident, ELFMAG, SELFMAG) != 0 ||
	    (ident[EI_CLASS] != ELFCLASS64 && ident[EI_CLASS] != ELFCLASS32) || !read_ehdr(fd, ident[EI_CLASS], &h)) {
		close(fd);
		return in;
	}
	in.ok = 1;
	in.cls = ident[EI_CLASS];
	in.machine = h.machine;
	/* p_type is the first word of a program header in both classes. */
	unsigned char *ph = h.phentsize >= 4 ? read_table(fd, h.phoff, h.phnum, h.phentsize) : NULL;
	for (unsigned i = 0; ph && i < h.phnum && !in.dynamic; i++) {
		uint32_t type;
		memcpy(&type, ph + (size_t)i * h.phentsize, sizeof type);
		in.dynamic = type == PT_INTERP;
	}
	free(ph);
	unsigned char *sh = read_table(fd, h.shoff, h.shnum, h.shentsize);
	unsigned sname;
	off_t strs_off;
	uint64_t strs_size;
	char *strs = NULL;
	if (sh && h.shstrndx != SHN_UNDEF && h.shstrndx < h.shnum && shdr_at(sh, in.cls, &h, h.shstrndx, &sname, &strs_off, &strs_size))
		strs = (char *)read_table(fd, strs_off, strs_size, 1);
	for (unsigned i = 0; strs && i < h.shnum && !in.is_go; i++) {
		unsigned name;
		off_t off;
		uint64_t size;
		if (!shdr_at(sh, in.cls, &h, i, &name, &off, &size))
			break;
		in.is_go = name < strs_size && strs_size - name >= sizeof go_section &&
			   memcmp(strs + name, go_section, sizeof go_section) == 0;
	}
	free(strs);
	free(sh);
	close(fd);
	return in;
}

static const char *class_name(unsigned char c)
{
	return c == ELFCLASS64 ? "ELFCLASS64" : c == ELFCLASS32 ? "ELFCLASS32" : "ELFCLASSNONE";
}

static void machine_name(unsigned m, char *buf, size_t cap)
{
	switch (m) {
	case EM_X86_64: snprintf(buf, cap, "EM_X86_64"); break;
	case EM_386: snprintf(buf, cap, "EM_386"); break;
	case EM_AARCH64: snprintf(buf, cap, "EM_AARCH64"); break;
	case EM_ARM: snprintf(buf, cap, "EM_ARM"); break;
	case EM_PPC64: snprintf(buf, cap, "EM_PPC64"); break;
	case EM_S390: snprintf(buf, cap, "EM_S390"); break;
	case EM_RISCV: snprintf(buf, cap, "EM_RISCV"); break;
	default: snprintf(buf, cap, "machine %u", m); break;
	}
}

/* secure_exec reports whether running the file (its stat) changes the user or group id, which
 * puts the loader in secure mode (it ignores LD_PRELOAD paths with a slash). */
static int secure_exec(const struct stat *st)
{
	return ((st->st_mode & S_ISUID) && st->st_uid != getuid()) || ((st->st_mode & S_ISGID) && st->st_gid != getgid());
}

/* check_program says on stderr, once, why the program at path (st: its stat) cannot be
 * accelerated; nothing for a program it can, or for a file that is not ELF (a script: its
 * interpreter decides). */
static void check_program(const char *path, const struct stat *st, const char *lib)
{
	struct elf_info p = read_elf(path);
	if (!p.ok)
		return;
	if (!p.dynamic && p.is_go) {
		fprintf(stderr, "goxio: %s is a statically linked Go program: LD_PRELOAD is ignored and Go does not call libc for sockets; nothing will be accelerated\n", path);
		return;
	}
	if (!p.dynamic) {
		fprintf(stderr, "goxio: %s is statically linked: the loader ignores LD_PRELOAD; nothing will be accelerated\n", path);
		return;
	}
	if (p.is_go) {
		fprintf(stderr, "goxio: %s is a Go program: Go does not call libc for sockets; nothing will be accelerated\n", path);
		return;
	}
	struct elf_info l = read_elf(lib);
	if (l.ok && (l.cls != p.cls || l.machine != p.machine)) {
		char pm[32], lm[32];
		machine_name(p.machine, pm, sizeof pm);
		machine_name(l.machine, lm, sizeof lm);
		fprintf(stderr, "goxio: %s is a %s %s program but %s is %s %s: the loader skips the library; nothing will be accelerated\n",
			path, class_name(p.cls), pm, lib, class_name(l.cls), lm);
		return;
	}
	if (secure_exec(st))
		fprintf(stderr, "goxio: %s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD for it; nothing will be accelerated\n", path);
}

/* parse_profile returns the canonical name of a VMA_SPEC value (a name in any case, or VMA's
 * number), or NULL. */
static const char *parse_profile(const char *v)
{
	while (isspace((unsigned char)*v))
		v++;
	size_t n = strlen(v);
	while (n > 0 && isspace((unsigned char)v[n - 1]))
		n--;
	for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
		if (strlen(profiles[i].name) == n && strncasecmp(v, profiles[i].name, n) == 0)
			return profiles[i].name;
		if (profiles[i].alias && strlen(profiles[i].alias) == n && strncmp(v, profiles[i].alias, n) == 0)
			return profiles[i].name;
	}
	return NULL;
}

static void set_env(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0) {
		fprintf(stderr, "goxio: run: setenv %s: %s\n", name, strerror(errno));
		exit(1);
	}
}

/* flag_value matches arg against -name / --name, with the value after '=' or in the next
 * argument; returns 1 and sets *val (and *i past a separate value), 0 if arg is another flag, -1
 * when the value is missing. */
static int flag_value(char **argv, int argc, int *i, const char *name, const char **val)
{
	const char *a = argv[*i] + 1;
	if (*a == '-')
		a++;
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0 || (a[n] != 0 && a[n] != '='))
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (*i + 1 >= argc)
		return -1;
	*val = argv[++*i];
	return 1;
}

static int run_cmd(int argc, char **argv)
{
	const char *profile = NULL, *lib = NULL;
	int i = 0;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] == 0)
			break;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		const char *bare = a + 1 + (a[1] == '-');
		if (strcmp(bare, "h") == 0 || strcmp(bare, "help") == 0) {
			fputs(usage, stderr);
			return 2;
		}
		int r = flag_value(argv, argc, &i, "p", &profile);
		if (r == 0)
			r = flag_value(argv, argc, &i, "lib", &lib);
		if (r == -1) {
			fprintf(stderr, "flag needs an argument: %s\n%s", a, usage);
			return 2;
		}
		if (r == 0) {
			fprintf(stderr, "flag provided but not defined: %s\n%s", a, usage);
			return 2;
		}
	}
	if (i >= argc) {
		fputs(usage, stderr);
		return 2;
	}
	char **prog_argv = argv + i;

	if (profile && *profile) {
		const char *name = parse_profile(profile);
		if (!name) {
			fprintf(stderr, "goxio: run: unknown profile \"%s\": want one of ", profile);
			for (size_t k = 0; k < sizeof profiles / sizeof profiles[0]; k++)
				fprintf(stderr, "%s%s", k ? ", " : "", profiles[k].name);
			fputc('\n', stderr);
			return 2;
		}
		set_env("VMA_SPEC", name);
		if (getenv("GOXIO_SPEC"))
			set_env("GOXIO_SPEC", name); /* it would win over VMA_SPEC */
	}

	char *lib_path;
	if (lib && *lib) {
		lib_path = strdup(lib);
	} else {
		char tried[4 * PATH_MAX];
		lib_path = find_library(tried, sizeof tried);
		if (!lib_path) {
			fprintf(stderr, "goxio: run: %s not found (looked at %s); set GOXIO_LIB or use --lib\n", LIB_NAME, tried);
			return 1;
		}
	}
	char *abs = clean_abs(lib_path);
	if (abs)
		lib_path = abs;
	struct stat st;
	if (stat(lib_path, &st) != 0) {
		fprintf(stderr, "goxio: run: library: stat %s: %s\n", lib_path, strerror(errno));
		return 1;
	}

	const char *eng = getenv("GOXIO_ENGINE");
	char *eng_path;
	if (eng && *eng) {
		eng_path = strdup(eng);
	} else {
		char *slash = strrchr(lib_path, '/');
		*slash = 0;
		eng_path = join3(slash == lib_path ? "" : lib_path, "/", ENGINE_NAME);
		*slash = '/';
	}
	if (!is_regular(eng_path))
		fprintf(stderr, "goxio: run: the engine %s is missing: the program's sockets will all go to the kernel\n", eng_path);

	set_env("LD_PRELOAD", prepend_preload(lib_path, getenv("LD_PRELOAD")));

	char err[PATH_MAX + 128];
	struct stat prog_st;
	char *path = look_path(prog_argv[0], &prog_st, err, sizeof err);
	if (!path) {
		fprintf(stderr, "goxio: run: %s\n", err);
		return 127;
	}
	check_program(path, &prog_st, lib_path);
	execv(path, prog_argv);
	int e = errno;
	fprintf(stderr, "goxio: run: exec %s: %s\n", path, strerror(e));
	return e == ENOENT ? 127 : 126;
}

/* exec_tool runs the Go tool with this program's arguments: next to this program (the build
 * directory), or in ../lib/goxio (installed). */
static int exec_tool(char **argv)
{
	char *dir = exe_dir();
	if (!dir) {
		fprintf(stderr, "goxio: cannot find its own directory (/proc/self/exe): %s\n", strerror(errno));
		return 127;
	}
	char *cands[2] = {join3(dir, "/", TOOL_NAME), join3(dir, "/../lib/goxio/", TOOL_NAME)};
	for (int i = 0; i < 2; i++) {
		if (is_regular(cands[i])) {
			execv(cands[i], argv);
			fprintf(stderr, "goxio: exec %s: %s\n", cands[i], strerror(errno));
			return 126;
		}
	}
	fprintf(stderr, "goxio: %s not found (looked at %s, %s); the goxio installation is incomplete\n", TOOL_NAME, cands[0],
		cands[1]);
	return 127;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "run") == 0)
		return run_cmd(argc - 2, argv + 2);
	return exec_tool(argv);
}

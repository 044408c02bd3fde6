/*
 * elfscan.c: what an ELF object imports and needs, and where the loader finds a library; the
 * parsing behind exec.c's question "can this program ever hand goxio a socket?".
 *
 * Both functions read a buffer (a file mapped by exec.c, or a fuzzer's bytes) and trust nothing in
 * it: every offset and size is checked against the buffer's length before it is used, and a
 * malformed or unexpected object is an answer of its own (GOXIO_ELF_KEEP), never a read outside.
 * They make no system call, allocate nothing and write only through their callbacks, so a vfork
 * child may run them (exec.c).
 *
 * Why not a library: libelf (elfutils) allocates and is not async-signal-safe, and the loader's own
 * look-up (dlopen with RTLD_NOLOAD and friends) would load the objects into the process that is
 * about to exec; the part of ELF read here is small (section headers, .dynsym, .dynamic).
 */
#include "preload.h"

#include <elf.h>
#include <string.h>

/* keep_imports are the functions through which a program could come to hold an inet socket or start
 * another program: the socket calls themselves (an AF_UNIX socket can receive an inet one), a new
 * program (which must keep the library in its environment), code loaded later, raw system calls. An
 * object that imports (leaves undefined) any of them keeps the library. */
static const char *const keep_imports[] = {
	"socket",   "accept",  "accept4",      "connect",      "bind",    "listen",	"send",	    "sendto",
	"sendmsg",  "sendmmsg", "recv",	       "recvfrom",     "recvmsg", "recvmmsg",	"getsockopt", "setsockopt",
	"shutdown", "execve",  "execv",	       "execvp",       "execvpe", "execl",	"execlp",   "execle",
	"fexecve",  "execveat", "posix_spawn", "posix_spawnp", "system",  "popen",	"syscall",  "dlopen",
	"dlmopen",
};

static const char *keep_import(const char *name) {
	for (size_t i = 0; i < sizeof keep_imports / sizeof keep_imports[0]; i++)
		if (strcmp(name, keep_imports[i]) == 0)
			return keep_imports[i];
	return NULL;
}

/* in reports whether [off, off+size) lies inside a buffer of len bytes. */
static int in(uint64_t off, uint64_t size, size_t len) { return off <= len && size <= len - off; }

/* str returns the NUL-terminated string at off in the string table tab (tabsz bytes), or NULL. */
static const char *str(const unsigned char *tab, uint64_t tabsz, uint64_t off) {
	if (off >= tabsz || memchr(tab + off, 0, tabsz - off) == NULL)
		return NULL;
	return (const char *)tab + off;
}

/* A table section (.dynsym, .dynamic) and the string table it links to, inside the buffer. */
struct table {
	const unsigned char *ent, *str;
	uint64_t size, strsz;
};

/* table_at checks section idx of the object (entries of entsize bytes, linked to a string table)
 * and fills t: 0, or -1 when it does not fit the buffer or is not what it says. */
static int table_at(const unsigned char *buf, size_t len, const Elf64_Ehdr *eh, unsigned idx, size_t entsize,
		    struct table *t) {
	Elf64_Shdr sh, strsh;
	memcpy(&sh, buf + eh->e_shoff + (uint64_t)idx * sizeof sh, sizeof sh);
	if (sh.sh_link >= eh->e_shnum)
		return -1;
	memcpy(&strsh, buf + eh->e_shoff + (uint64_t)sh.sh_link * sizeof strsh, sizeof strsh);
	if (strsh.sh_type != SHT_STRTAB || sh.sh_entsize != entsize || !in(sh.sh_offset, sh.sh_size, len) ||
	    !in(strsh.sh_offset, strsh.sh_size, len))
		return -1;
	*t = (struct table){.ent = buf + sh.sh_offset, .str = buf + strsh.sh_offset, .size = sh.sh_size,
			    .strsz = strsh.sh_size};
	return 0;
}

int goxio_elf_scan(const unsigned char *buf, size_t len, int how, int (*need)(void *ctx, const char *name),
		   void *ctx, const char **why) {
	Elf64_Ehdr eh;
	int exe = how & GOXIO_ELF_EXE;
	if (exe && len >= 2 && buf[0] == '#' && buf[1] == '!') {
		*why = "a script (its interpreter decides)";
		return GOXIO_ELF_KEEP;
	}
	if (len < sizeof eh || memcmp(buf, ELFMAG, SELFMAG) != 0) {
		*why = "not an ELF file";
		return GOXIO_ELF_KEEP;
	}
	memcpy(&eh, buf, sizeof eh);
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
		*why = "not an x86-64 program or library";
		return GOXIO_ELF_KEEP;
	}
	if (exe) {
		/* A program without an interpreter is static: the loader never reads LD_PRELOAD. */
		int interp = 0;
		if (eh.e_phentsize != sizeof(Elf64_Phdr) || !in(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), len)) {
			*why = "malformed program headers";
			return GOXIO_ELF_KEEP;
		}
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			memcpy(&ph, buf + eh.e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
			interp |= ph.p_type == PT_INTERP;
		}
		if (!interp) {
			*why = "statically linked";
			return GOXIO_ELF_KEEP;
		}
	}
	if (eh.e_shnum == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    !in(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), len)) {
		*why = "no section headers";
		return GOXIO_ELF_KEEP;
	}
	const unsigned char *sh0 = buf + eh.e_shoff;
	int dynsym = -1, dynamic = -1;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		memcpy(&sh, sh0 + (uint64_t)i * sizeof sh, sizeof sh);
		if (sh.sh_type == SHT_DYNSYM)
			dynsym = dynsym < 0 ? (int)i : -2;
		else if (sh.sh_type == SHT_DYNAMIC)
			dynamic = dynamic < 0 ? (int)i : -2;
	}
	if (dynsym < 0 || dynamic < 0) {
		*why = "no single dynamic symbol table";
		return GOXIO_ELF_KEEP;
	}
	struct table syms, dyn;
	if (table_at(buf, len, &eh, (unsigned)dynsym, sizeof(Elf64_Sym), &syms) != 0 ||
	    table_at(buf, len, &eh, (unsigned)dynamic, sizeof(Elf64_Dyn), &dyn) != 0) {
		*why = "malformed section";
		return GOXIO_ELF_KEEP;
	}
	if (how & GOXIO_ELF_NEEDS_ONLY)
		syms.size = 0; /* its imports are not read */
	for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= syms.size; off += sizeof(Elf64_Sym)) {
		Elf64_Sym s;
		memcpy(&s, syms.ent + off, sizeof s);
		if (s.st_shndx != SHN_UNDEF || s.st_name == 0)
			continue;
		const char *name = str(syms.str, syms.strsz, s.st_name);
		if (name == NULL) {
			*why = "malformed symbol";
			return GOXIO_ELF_KEEP;
		}
		const char *k = keep_import(name);
		if (k != NULL) {
			*why = k;
			return GOXIO_ELF_KEEP;
		}
	}
	for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= dyn.size; off += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;
		memcpy(&d, dyn.ent + off, sizeof d);
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_RPATH || d.d_tag == DT_RUNPATH) {
			/* The loader would search these first; exec.c follows only the system's places. */
			*why = "a run path of its own";
			return GOXIO_ELF_KEEP;
		}
		if (d.d_tag != DT_NEEDED)
			continue;
		const char *name = str(dyn.str, dyn.strsz, d.d_un.d_val);
		if (name == NULL) {
			*why = "malformed needed entry";
			return GOXIO_ELF_KEEP;
		}
		if (need(ctx, name) != 0) {
			*why = "too many or too long library names";
			return GOXIO_ELF_KEEP;
		}
	}
	return GOXIO_ELF_OK;
}

/* The ld.so.cache format of glibc 2.32 and later ("new" format only), as ldconfig writes it: a
 * header, nlibs entries, then the strings; an entry's key (the library's name) and value (its path)
 * are offsets from the start of the file. */
#define LDCACHE_MAGIC "glibc-ld.so.cache1.1"
#define LDCACHE_HDR 48
#define LDCACHE_ENT 24
#define LDCACHE_X8664 0x0303 /* FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 */

int goxio_ldcache_find(const unsigned char *cache, size_t len, const char *name, int (*each)(void *ctx, const char *path),
		       void *ctx) {
	uint32_t nlibs;
	if (len < LDCACHE_HDR || memcmp(cache, LDCACHE_MAGIC, sizeof LDCACHE_MAGIC - 1) != 0)
		return -1;
	memcpy(&nlibs, cache + 20, sizeof nlibs);
	if (!in(LDCACHE_HDR, (uint64_t)nlibs * LDCACHE_ENT, len))
		return -1;
	int found = 0;
	for (uint32_t i = 0; i < nlibs; i++) {
		const unsigned char *e = cache + LDCACHE_HDR + (uint64_t)i * LDCACHE_ENT;
		int32_t flags;
		uint32_t key, value;
		memcpy(&flags, e, 4);
		memcpy(&key, e + 4, 4);
		memcpy(&value, e + 8, 4);
		if (flags != LDCACHE_X8664)
			continue;
		const char *k = str(cache, len, key), *v = str(cache, len, value);
		if (k == NULL || v == NULL)
			return -1;
		if (strcmp(k, name) != 0)
			continue;
		found++;
		if (each(ctx, v) != 0)
			return -1;
	}
	return found;
}

/* scan.c: the preload library's ELF reading, built into this test package (see scan_unsafe.go). */
#include "../../shim/preload/elfscan.c"

#include "_cgo_export.h"

static int need_cb(void *ctx, const char *name) { return elfscanNeed(ctx, (char *)name); }
static int each_cb(void *ctx, const char *path) { return elfscanEach(ctx, (char *)path); }

int elfscan_scan(const unsigned char *buf, size_t len, int how, void *ctx, const char **why) {
	return goxio_elf_scan(buf, len, how, need_cb, ctx, why);
}

int elfscan_find(const unsigned char *buf, size_t len, const char *name, void *ctx) {
	return goxio_ldcache_find(buf, len, name, each_cb, ctx);
}

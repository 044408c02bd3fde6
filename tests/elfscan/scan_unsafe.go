// Package elfscan runs the preload library's ELF reading (shim/preload/elfscan.c, built into
// this package by scan.c) from Go, so that its tests can feed it real programs and a fuzzer's
// bytes. The library itself never uses this package.
package elfscan

/*
#cgo CFLAGS: -D_GNU_SOURCE -O1 -Wall
#include <stdlib.h>
#include <stddef.h>

enum { elfscan_keep = 1, elfscan_exe = 1, elfscan_needs_only = 2 };
int elfscan_scan(const unsigned char *buf, size_t len, int how, void *ctx, const char **why);
int elfscan_find(const unsigned char *buf, size_t len, const char *name, void *ctx);
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// How goxio_elf_scan reads an object (GOXIO_ELF_EXE and GOXIO_ELF_NEEDS_ONLY in preload.h).
const (
	Exe       = C.elfscan_exe        // a program (else a library)
	NeedsOnly = C.elfscan_needs_only // its needed libraries only, not its imports
)

type collect struct {
	names []string
	limit int
}

// fromCtx: ctx points at C memory holding a cgo.Handle of a *collect (Scan and LdCache make it
// and delete it after the C call returns, so the handle is valid for every callback).
func fromCtx(ctx unsafe.Pointer) *collect {
	return cgo.Handle(*(*uintptr)(ctx)).Value().(*collect)
}

//export elfscanNeed
func elfscanNeed(ctx unsafe.Pointer, name *C.char) C.int {
	c := fromCtx(ctx)
	if len(c.names) >= c.limit {
		return 1
	}
	c.names = append(c.names, C.GoString(name))
	return 0
}

//export elfscanEach
func elfscanEach(ctx unsafe.Pointer, path *C.char) C.int {
	c := fromCtx(ctx)
	c.names = append(c.names, C.GoString(path))
	return 0
}

// call runs f with a C copy of buf and a context for c; the C copy is freed afterwards, so the
// C side reads only C memory, exactly len(buf) bytes of it.
func call(buf []byte, c *collect, f func(p *C.uchar, n C.size_t, ctx unsafe.Pointer)) {
	h := cgo.NewHandle(c)
	defer h.Delete()
	hp := (*uintptr)(C.malloc(C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(hp))
	*hp = uintptr(h)
	cbuf := C.CBytes(buf)
	defer C.free(cbuf)
	f((*C.uchar)(cbuf), C.size_t(len(buf)), unsafe.Pointer(hp))
}

// Scan reads the ELF object buf as how says: keep reports that it keeps the library (why says
// why), needed lists the libraries it needs (at most 48, as exec.c takes).
func Scan(buf []byte, how int) (keep bool, why string, needed []string) {
	c := &collect{limit: 48}
	call(buf, c, func(p *C.uchar, n C.size_t, ctx unsafe.Pointer) {
		var w *C.char
		keep = C.elfscan_scan(p, n, C.int(how), ctx, &w) == C.elfscan_keep
		if w != nil {
			why = C.GoString(w)
		}
	})
	return keep, why, c.names
}

// LdCache lists the x86-64 paths the ld.so.cache image cache gives for the library name; n is
// goxio_ldcache_find's answer (-1: not understood).
func LdCache(cache []byte, name string) (paths []string, n int) {
	c := &collect{}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	call(cache, c, func(p *C.uchar, l C.size_t, ctx unsafe.Pointer) {
		n = int(C.elfscan_find(p, l, cname, ctx))
	})
	return c.names, n
}

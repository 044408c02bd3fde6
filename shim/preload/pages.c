/*
 * pages.c: a thread's set of program pages the engine read or wrote for it (preload.h, struct
 * goxio_pages), which the library's own copies to and from program memory stay within.
 */
#include "preload.h"

#define PAGE_SHIFT 12 /* the smallest page: a larger one is validated 4 KiB at a time */

static int known(const struct goxio_pages *s, uintptr_t pg) {
	for (int i = 0; i < GOXIO_PAGES; i++)
		if (s->page[i] == pg + 1)
			return 1;
	return 0;
}

int goxio_pages_ok(const struct goxio_pages *s, const void *p, size_t len) {
	if (len == 0)
		return 1;
	uintptr_t a = (uintptr_t)p, first = a >> PAGE_SHIFT, last = (a + len - 1) >> PAGE_SHIFT;
	if (last < first || last - first >= GOXIO_PAGES)
		return 0;
	for (uintptr_t pg = first; pg <= last; pg++)
		if (!known(s, pg))
			return 0;
	return 1;
}

void goxio_pages_note(struct goxio_pages *s, const void *p, size_t len) {
	if (p == NULL || len == 0)
		return;
	uintptr_t a = (uintptr_t)p, first = a >> PAGE_SHIFT, last = (a + len - 1) >> PAGE_SHIFT;
	if (last < first || last - first >= GOXIO_PAGES)
		return;
	for (uintptr_t pg = first; pg <= last; pg++)
		if (!known(s, pg))
			s->page[s->next++ % GOXIO_PAGES] = pg + 1;
}

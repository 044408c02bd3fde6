/*
 * fdslots.c: per-fd objects the preload library allocates on demand and never frees (preload.h,
 * struct goxio_fd_slots): box.c's boxes, rsend.c's routes. A reader may keep an object for as
 * long as it likes; the fd number keeps it for the next socket that gets the number.
 */
#include "preload.h"

#include <stdlib.h>

void *goxio_fd_slot(struct goxio_fd_slots *t, int fd, int make) {
	if ((unsigned)fd >= GOXIO_FDT_SIZE)
		return NULL;
	void **chunk = __atomic_load_n(&t->chunks[fd / GOXIO_FD_SLOTS_CHUNK], __ATOMIC_ACQUIRE);
	void *s = chunk ? __atomic_load_n(&chunk[fd % GOXIO_FD_SLOTS_CHUNK], __ATOMIC_ACQUIRE) : NULL;
	if (s != NULL || !make)
		return s;
	pthread_mutex_lock(&t->mu);
	chunk = t->chunks[fd / GOXIO_FD_SLOTS_CHUNK];
	if (chunk == NULL && (chunk = calloc(GOXIO_FD_SLOTS_CHUNK, sizeof *chunk)) != NULL)
		__atomic_store_n(&t->chunks[fd / GOXIO_FD_SLOTS_CHUNK], chunk, __ATOMIC_RELEASE);
	if (chunk != NULL && (s = chunk[fd % GOXIO_FD_SLOTS_CHUNK]) == NULL && (s = calloc(1, t->size)) != NULL)
		__atomic_store_n(&chunk[fd % GOXIO_FD_SLOTS_CHUNK], s, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&t->mu);
	return s;
}

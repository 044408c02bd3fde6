/*
 * engine.h: the C side as the engine (libgoxio-engine.so) sees it.
 *
 * The functions below keep the names the engine's Go files have always called; host.c
 * implements them through the struct goxio_host that the preload library handed to
 * goxio_engine_init. They are hidden: the engine's calls never bind to the preload library's
 * symbols of the same name.
 */
#ifndef GOXIO_ENGINE_H
#define GOXIO_ENGINE_H

#include "goxio.h"

#define GOXIO_LIKELY(x) __builtin_expect(!!(x), 1)
#define GOXIO_UNLIKELY(x) __builtin_expect(!!(x), 0)

GOXIO_HIDDEN void goxio_fdt_set(int fd, int flags);
GOXIO_HIDDEN int goxio_fdt_get(int fd);
GOXIO_HIDDEN uint64_t goxio_fdt_tag(int fd);
GOXIO_HIDDEN int goxio_internal_adopt(int fd, int *owner);
GOXIO_HIDDEN struct goxio_sig_counters *goxio_sig_counters(void);
GOXIO_HIDDEN void goxio_spill_set(int fd, void *region);
GOXIO_HIDDEN void goxio_set_ready(int ready);
GOXIO_HIDDEN int goxio_main_is_go(void);
GOXIO_HIDDEN void goxio_set_quiet_threads(int n);
GOXIO_HIDDEN int goxio_get_quiet_threads(void);
GOXIO_HIDDEN uint32_t *goxio_ksend_setup(const uint64_t *gen, const uint64_t *capture, uint64_t *plain);
GOXIO_HIDDEN void goxio_ksend_put(const struct sockaddr *dst, socklen_t len, uint64_t gen);
GOXIO_HIDDEN void goxio_ksend_put_tcp(const struct sockaddr *dst, socklen_t len, uint64_t gen, int goxio);
GOXIO_HIDDEN void goxio_ksend_fd(int fd, uint64_t *counters);
GOXIO_HIDDEN void goxio_ksend_drop(int fd);
GOXIO_HIDDEN void goxio_ksend_peer(int fd, const struct sockaddr *peer, socklen_t len);
GOXIO_HIDDEN void goxio_rsend_set(int fd, const struct goxio_txroute *route, const struct sockaddr *dst, socklen_t len);
GOXIO_HIDDEN void goxio_rsend_drop(int fd);
GOXIO_HIDDEN void goxio_early_setup(uint64_t *pairs, uint64_t start, int pair_after, uint64_t grace_ns, uint64_t *closed);
GOXIO_HIDDEN void goxio_early_listener(int fd, int domain);
GOXIO_HIDDEN void goxio_early_spin(int on);
GOXIO_HIDDEN int goxio_vma_api_used(void);
GOXIO_HIDDEN int64_t goxio_nofile_cur(void);

/* The owners of the engine's internal fds (fdtable.c relocates them): the log file's
 * (VMA_LOG_FILE) and VMA_STATS_FILE's; -1 when unset. */
extern int goxio_log_fd;
extern int goxio_stats_file_fd;

#endif

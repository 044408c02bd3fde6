/*
 * host.c: the engine's side of the one call between the two libraries (shim/goxio.h).
 *
 * goxio_engine_init keeps the preload library's struct goxio_host, fills in the engine's entry
 * points and starts the engine (goxio_go_start: like every exported Go function it first waits
 * for the Go runtime's initialization, which dlopen started).
 */
#include "engine.h"

#include <arpa/inet.h>
#include <stddef.h>
#include <string.h>

static const struct goxio_host *host;

int goxio_log_fd = -1;
int goxio_stats_file_fd = -1;

void goxio_fdt_set(int fd, int flags) { host->fdt_set(fd, flags); }
int goxio_fdt_get(int fd) { return host->fdt_get(fd); }
uint64_t goxio_fdt_tag(int fd) { return host->fdt_tag(fd); }
int goxio_internal_adopt(int fd, int *owner) { return host->internal_adopt(fd, owner); }
struct goxio_sig_counters *goxio_sig_counters(void) { return host->sig_counters(); }
void goxio_spill_set(int fd, void *region) { host->spill_set(fd, region); }
void goxio_set_ready(int ready) { host->set_ready(ready); }
int goxio_main_is_go(void) { return host->main_is_go; }
void goxio_set_quiet_threads(int n) { __atomic_store_n(host->quiet_threads, n, __ATOMIC_RELAXED); }
int goxio_get_quiet_threads(void) { return __atomic_load_n(host->quiet_threads, __ATOMIC_RELAXED); }
uint32_t *goxio_ksend_setup(const uint64_t *gen, const uint64_t *capture, uint64_t *plain) {
	return host->ksend_setup(gen, capture, plain);
}
void goxio_ksend_put(const struct sockaddr *dst, socklen_t len, uint64_t gen) { host->ksend_put(dst, len, gen); }
void goxio_ksend_put_tcp(const struct sockaddr *dst, socklen_t len, uint64_t gen, int goxio) {
	host->ksend_put_tcp(dst, len, gen, goxio);
}
void goxio_ksend_fd(int fd, uint64_t *counters) { host->ksend_fd(fd, counters); }
void goxio_ksend_drop(int fd) { host->ksend_drop(fd); }
void goxio_ksend_peer(int fd, const struct sockaddr *peer, socklen_t len) { host->ksend_peer(fd, peer, len); }
void goxio_early_setup(uint64_t *pairs, uint64_t start, int pair_after, uint64_t grace_ns, uint64_t *closed) {
	host->early_setup(pairs, start, pair_after, grace_ns, closed);
}
void goxio_early_listener(int fd, int domain) { host->early_listener(fd, domain); }
void goxio_early_spin(int on) { host->early_spin(on); }
void goxio_rsend_set(int fd, const struct goxio_txroute *route, const struct sockaddr *dst, socklen_t len) {
	host->rsend_set(fd, route, dst, len);
}
void goxio_rsend_drop(int fd) { host->rsend_drop(fd); }
int goxio_vma_api_used(void) { return __atomic_load_n(host->vma_api_used, __ATOMIC_ACQUIRE); }
int64_t goxio_nofile_cur(void) { return host->nofile_cur; }

/* Go exports (exports.go, threads.go, adopt.go). */
extern long goxio_go_call(int op, int fd, uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4);
extern void goxio_go_prefork(void);
extern void goxio_go_prespawn(int all);
extern void goxio_go_exit(void);
extern void goxio_go_threads(int n);
extern void goxio_go_adopt(int fd, uint32_t how, int ref, uint32_t addr, int port, uint64_t txp, uint64_t txb,
			   uint64_t txa, uint64_t txe, uint64_t rxp, uint64_t rxb, uint8_t *dst);
extern void goxio_go_early(int fd, struct goxio_early_handover *h);
extern int goxio_go_start(void);
extern long goxio_go_vma_rule(char *line);
extern long goxio_go_vma_dump(int fd, int level);
extern long goxio_go_vma_macs(uint32_t src, uint32_t dst, uint64_t *dst_mac, uint64_t *src_mac);

static long vma_rule(const char *line) { return goxio_go_vma_rule((char *)line); }

static void adopt(int fd, const struct goxio_lazy_info *info) {
	int port = info->peer.sin_family == AF_INET ? ntohs(info->peer.sin_port) : -1;
	uint64_t tx[GOXIO_KSEND_COUNTERS];
	for (int i = 0; i < GOXIO_KSEND_COUNTERS; i++)
		tx[i] = __atomic_load_n(&info->tx[i], __ATOMIC_RELAXED);
	uint8_t dst[28] = {0};
	uint64_t rx[2] = {0, 0};
	if ((info->how & GOXIO_LAZY_KERNEL_DST) && info->early.keyed <= sizeof dst) {
		/* a UDP socket's early phase before the engine: its destination, and the datagrams
		 * and bytes it received through the kernel (early.c) */
		memcpy(dst, (const void *)info->early.key, info->early.keyed);
		rx[0] = __atomic_load_n(&info->early.krx, __ATOMIC_RELAXED);
		rx[1] = __atomic_load_n(&info->early.ktx, __ATOMIC_RELAXED);
	}
	goxio_go_adopt(fd, info->how, info->ref, ntohl(info->peer.sin_addr.s_addr), port, tx[0], tx[1], tx[2], tx[3],
		       rx[0], rx[1], dst);
}

static void early(int fd, const struct goxio_early_handover *h) {
	struct goxio_early_handover copy = *h;
	goxio_go_early(fd, &copy);
}

int goxio_engine_init(const struct goxio_host *h, struct goxio_engine *e) {
	if (h == NULL || e == NULL || h->size != sizeof(struct goxio_host) || e->size != sizeof(struct goxio_engine))
		return 0; /* a preload library and an engine from different builds */
	host = h;
	e->call = goxio_go_call;
	e->prefork = goxio_go_prefork;
	e->prespawn = goxio_go_prespawn;
	e->exit = goxio_go_exit;
	e->threads = goxio_go_threads;
	e->adopt = adopt;
	e->early = early;
	e->vma_rule = vma_rule;
	e->vma_dump = goxio_go_vma_dump;
	e->vma_macs = goxio_go_vma_macs;
	return goxio_go_start();
}

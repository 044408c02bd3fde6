/*
 * vma_extra.c: VMA's extra socket API (goxio_extra.h): the API object getsockopt(SO_VMA_GET_API)
 * returns, with the members goxio provides (vma_records.c, vma_callback.c, vma_members.c) and the
 * refusing stubs of the others.
 */
#include "vma.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

_Static_assert(sizeof(struct vma_api_t) == 21 * 8, "vma_api_t: 21 slots of 8 bytes");

/* ---- members goxio refuses (as VMA's own stubs do: -1, EOPNOTSUPP) ---- */

#define REFUSE                                                                                             \
	do {                                                                                               \
		errno = EOPNOTSUPP;                                                                        \
		return -1;                                                                                 \
	} while (0)

static int no_register_recv_callback(int s, vma_recv_callback_t cb, void *ctx) { REFUSE; }
static int no_recvfrom_zcopy(int s, void *buf, size_t len, int *flags, struct sockaddr *from, socklen_t *fromlen) {
	REFUSE;
}
static int no_free_packets(int s, struct vma_packet_t *pkts, size_t count) { REFUSE; }
static int no_add_conf_rule(const char *line) { REFUSE; }
static int no_thread_offload(int offload, pthread_t tid) { REFUSE; }
static int no_socketxtreme_poll(int fd, struct vma_completion_t *c, unsigned int n, int flags) { REFUSE; }
static int no_get_socket_rings_num(int fd) { REFUSE; }
static int no_get_socket_rings_fds(int fd, int *fds, int n) { REFUSE; }
static int no_get_socket_tx_ring_fd(int fd, struct sockaddr *to, socklen_t len) { REFUSE; }
static int no_socketxtreme_free_vma_packets(struct vma_packet_desc_t *p, int n) { REFUSE; }
static int no_socketxtreme_ref_vma_buff(struct vma_buff_t *b) { REFUSE; }
static int no_socketxtreme_free_vma_buff(struct vma_buff_t *b) { REFUSE; }
static int no_dump_fd_stats(int fd, int level) { REFUSE; }
static int no_vma_add_ring_profile(struct vma_ring_type_attr *p, int *key) { REFUSE; }
static int no_get_socket_network_header(int fd, void *ptr, uint16_t *len) { REFUSE; }
static int no_get_ring_direct_descriptors(int fd, struct vma_mlx_hw_device_data *d) { REFUSE; }
static int no_register_memory_on_ring(int fd, void *addr, size_t len, uint32_t *key) { REFUSE; }
static int no_deregister_memory_on_ring(int fd, void *addr, size_t len) { REFUSE; }
static int no_vma_modify_ring(struct vma_modify_ring_attr *a) { REFUSE; }
static int no_ioctl(void *cmsg, size_t len) { REFUSE; }

/* ---- the API object ---- */

static struct vma_api_t api = {
	.register_recv_callback = no_register_recv_callback,
	.recvfrom_zcopy = no_recvfrom_zcopy,
	.free_packets = no_free_packets,
	.add_conf_rule = no_add_conf_rule,
	.thread_offload = no_thread_offload,
	.socketxtreme_poll = no_socketxtreme_poll,
	.get_socket_rings_num = no_get_socket_rings_num,
	.get_socket_rings_fds = no_get_socket_rings_fds,
	.get_socket_tx_ring_fd = no_get_socket_tx_ring_fd,
	.socketxtreme_free_vma_packets = no_socketxtreme_free_vma_packets,
	.socketxtreme_ref_vma_buff = no_socketxtreme_ref_vma_buff,
	.socketxtreme_free_vma_buff = no_socketxtreme_free_vma_buff,
	.dump_fd_stats = no_dump_fd_stats,
	.vma_add_ring_profile = no_vma_add_ring_profile,
	.get_socket_network_header = no_get_socket_network_header,
	.get_ring_direct_descriptors = no_get_ring_direct_descriptors,
	.register_memory_on_ring = no_register_memory_on_ring,
	.deregister_memory_on_ring = no_deregister_memory_on_ring,
	.vma_modify_ring = no_vma_modify_ring,
	.vma_extra_supported_mask = 0,
	.ioctl = no_ioctl,
};

static pthread_once_t api_once = PTHREAD_ONCE_INIT;

/* switched_off reports whether v is one of the false values of the engine's boolean parameters
 * (conf.parseBool): false, no, off, disable, disabled in any case, or an integer equal to 0. A value
 * the engine refuses (it says so at start) leaves the API on, its default. */
static int switched_off(const char *v) {
	while (*v == ' ' || *v == '\t')
		v++;
	static const char *const off[] = {"false", "no", "off", "disable", "disabled"};
	for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
		size_t n = strlen(off[i]);
		if (strncasecmp(v, off[i], n) == 0 && (v[n] == 0 || v[n] == ' ' || v[n] == '\t'))
			return 1;
	}
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	while (*end == ' ' || *end == '\t')
		end++;
	return end != v && *end == 0 && errno == 0 && n == 0;
}

/* api_init fills in the members goxio provides, unless GOXIO_EXTRA_API switches them off. */
static void api_init(void) {
	int saved = errno;
	const char *v = getenv("GOXIO_EXTRA_API");
	int off = v != NULL && switched_off(v);
	errno = saved;
	if (off)
		return;
	api.register_recv_callback = vma_register_recv_callback;
	api.recvfrom_zcopy = vma_recvfrom_zcopy;
	api.thread_offload = vma_thread_offload;
	api.add_conf_rule = vma_add_conf_rule;
	api.dump_fd_stats = vma_dump_fd_stats;
	api.get_socket_network_header = vma_get_socket_network_header;
	api.free_packets = vma_free_packets;
	api.get_socket_rings_num = vma_get_socket_rings_num;
	api.get_socket_rings_fds = vma_get_socket_rings_fds;
	api.get_socket_tx_ring_fd = vma_get_socket_tx_ring_fd;
	api.vma_extra_supported_mask = VMA_EXTRA_API_REGISTER_RECV_CALLBACK | VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_THREAD_OFFLOAD |
				       VMA_EXTRA_API_ADD_CONF_RULE | VMA_EXTRA_API_DUMP_FD_STATS |
				       VMA_EXTRA_API_GET_SOCKET_NETWORK_HEADER | VMA_EXTRA_API_FREE_PACKETS |
				       VMA_EXTRA_API_GET_SOCKET_RINGS_NUM | VMA_EXTRA_API_GET_SOCKET_RINGS_FDS |
				       VMA_EXTRA_API_GET_SOCKET_TX_RING_FD;
	__atomic_store_n(&goxio_vma_api_used, 1, __ATOMIC_RELEASE);
}

/* goxio_vma_api_used: the program was handed the API with its members (goxio_host.vma_api_used). */
volatile int goxio_vma_api_used;

/* goxio_vma_get_api answers getsockopt(any fd, SOL_SOCKET, SO_VMA_GET_API): the API object's
 * address in *val. */
GOXIO_HIDDEN int goxio_vma_get_api(void *val, socklen_t *len) {
	if (val == NULL || len == NULL) {
		errno = EFAULT;
		return -1;
	}
	if (*len < sizeof(struct vma_api_t *)) {
		errno = EINVAL;
		return -1;
	}
	pthread_once(&api_once, api_init);
	struct vma_api_t *p = &api;
	memcpy(val, &p, sizeof p);
	*len = sizeof p;
	return 0;
}

/*
 * goxio_extra.h: VMA's extra socket API as goxio serves it, for C and C++ programs.
 *
 * A program written against VMA's vma_extra.h asks for the API with
 * getsockopt(-1, SOL_SOCKET, SO_VMA_GET_API, &ptr, &len) (goxio_get_api() below does exactly that)
 * and calls through the returned structure. The structure has VMA's binary layout (packed, 21
 * slots of 8 bytes, in VMA's order) so programs built against VMA's header work unchanged. Every
 * function slot is set; a member goxio does not provide returns -1 with errno EOPNOTSUPP, and its
 * bit in vma_extra_supported_mask is clear. Check the mask before relying on a member.
 *
 * With GOXIO_EXTRA_API=0 in the environment every bit is clear and every member refuses with
 * EOPNOTSUPP, so programs take their fallback paths.
 *
 * What goxio provides (bits set in the mask). "Served" means the library handles the socket (it is
 * not passed through to the kernel by a rule, thread_offload or the library's own choice), whatever
 * transport carries its data:
 *   recvfrom_zcopy, free_packets: the datagram (or the stream's next bytes) is handed over in a
 *     record the library owns and the program holds until free_packets; the buffer given to
 *     recvfrom_zcopy receives a struct vma_packets_t with one packet and one iovec pointing at it,
 *     and *flags gets MSG_VMA_ZCOPY. free_packets refuses (ENOENT) a packet id this socket does not
 *     hold: a second free, another socket's packet, or a pointer it never returned.
 *     On a UDP socket served through shared-memory rings, a datagram from a ring is not copied:
 *     the iovec points at it inside the ring (a /dev/shm mapping), which keeps it until
 *     free_packets. Held records fill the ring as unread datagrams fill a receive buffer: a sender
 *     whose ring is full of them gets what a full receive buffer gives it (a drop, or EAGAIN with
 *     VMA_TX_NONBLOCKED_EAGAINS), until the program frees the oldest. A held record survives its
 *     sender's exit; records still held when the socket is closed go with it (their memory is
 *     unmapped: do not read them after close). Datagrams through the kernel socket, and every
 *     other transport, are copied once into the library's record.
 *   register_recv_callback: on a UDP socket the library serves (EINVAL on any other fd), each
 *     datagram goes to the callback before the program's read, recv, recvfrom, readv or recvmsg
 *     sees it, from inside that call: VMA_PACKET_DROP discards it, VMA_PACKET_HOLD hands its record
 *     to the program (vma_info_t.packet_id, for free_packets), VMA_PACKET_RECV lets the call deliver
 *     it. A NULL callback unregisters. Peeks and recvmmsg do not run the callback; select, poll and
 *     epoll report a socket readable for a datagram the callback may then drop.
 *   thread_offload: thread_offload(0, tid) makes the sockets thread tid creates from then on plain
 *     kernel sockets the library never serves; thread_offload(1, tid) undoes it. Existing sockets
 *     keep their transport.
 *   add_conf_rule: one "use" line in libvma.conf syntax goes first among the rules deciding for
 *     this process; sockets decided before keep their decision. Any other line: -1, EINVAL.
 *   dump_fd_stats: the socket's state (fd 0: every socket) goes to the library's log at log_level,
 *     in VMA's numbering (0 panic .. 8 all); another level: -1, EINVAL.
 *   get_socket_network_header: for a connected UDP socket, the 42 bytes of Ethernet II, IPv4 and
 *     UDP headers its datagrams carry (MACs from the kernel's route and neighbour tables, zero on
 *     loopback; addresses, ports, TOS, TTL, DF); lengths, IPv4 id and checksums, which differ per
 *     datagram, are zero. EINVAL for a socket the library does not serve (VMA's "is it
 *     offloaded?" probe), ENOTCONN for one without a peer, ENOBUFS (and the size in *len) for a
 *     short buffer; a NULL ptr only sets *len. EHOSTUNREACH while the next hop is unresolved.
 *   get_socket_rings_num, get_socket_rings_fds, get_socket_tx_ring_fd: one ring per socket the
 *     library serves through a ring transport (none, and ENODATA for the TX ring, for one served
 *     through the kernel); its fd is the socket's own, readable (through select, poll and epoll)
 *     when the ring holds data. EINVAL for a socket the library does not serve.
 *
 * The names, constants and layouts are VMA's (they must match for binary compatibility); a program
 * may include either this header or VMA's, not both.
 */
#ifndef GOXIO_EXTRA_H
#define GOXIO_EXTRA_H

#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h> /* struct iovec too: <sys/uio.h> would declare readv and writev, which
			  * programs such as sockperf redefine as macros before they include this */
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* recvfrom_zcopy flags: in, never fall back to copying into the caller's buffer; out, the buffer
 * holds a struct vma_packets_t. */
#define MSG_VMA_ZCOPY_FORCE 0x01000000
#define MSG_VMA_ZCOPY 0x00040000

/* Socket options at level SOL_SOCKET. */
#define SO_VMA_GET_API 2800
#define SO_VMA_USER_DATA 2801
#define SO_VMA_RING_ALLOC_LOGIC 2810
#define SO_VMA_RING_USER_MEMORY 2811
#define SO_VMA_FLOW_TAG 2820
#define SO_VMA_SHUTDOWN_RX 2821

/* Verdicts of a receive callback. */
typedef enum {
	VMA_PACKET_DROP, /* the datagram is dropped */
	VMA_PACKET_RECV, /* the datagram is queued for the ordinary receive calls */
	VMA_PACKET_HOLD  /* the program keeps it and returns it with free_packets */
} vma_recv_callback_retval_t;

/* Events of socketxtreme_poll completions (besides epoll's). */
typedef enum {
	VMA_SOCKETXTREME_PACKET = (1ULL << 32),
	VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED = (1ULL << 33)
} vma_socketxtreme_events_t;

/* One buffer of a socketxtreme packet. */
struct vma_buff_t {
	struct vma_buff_t *next;
	void *payload;
	uint16_t len;
};

/* One socketxtreme packet. */
struct vma_packet_desc_t {
	size_t num_bufs;
	uint16_t total_len;
	struct vma_buff_t *buff_lst;
	struct timespec hw_timestamp;
};

/* One socketxtreme completion. */
struct vma_completion_t {
	struct vma_packet_desc_t packet;
	uint64_t events;
	uint64_t user_data;
	struct sockaddr_in src;
	int listen_fd;
};

/* One packet handed over by recvfrom_zcopy: its id (for free_packets) and its fragments. */
struct __attribute__((packed)) vma_packet_t {
	void *packet_id;
	size_t sz_iov;
	struct iovec iov[];
};

/* What recvfrom_zcopy writes into the caller's buffer. */
struct __attribute__((packed)) vma_packets_t {
	size_t n_packet_num;
	struct vma_packet_t pkts[];
};

/* What a receive callback learns about the datagram and the socket. */
struct __attribute__((packed)) vma_info_t {
	size_t struct_sz;
	void *packet_id;
	struct sockaddr_in *src;
	struct sockaddr_in *dst;
	size_t payload_sz;
	uint32_t socket_ready_queue_pkt_count;
	uint32_t socket_ready_queue_byte_count;
	struct timespec hw_timestamp;
	struct timespec sw_timestamp;
};

typedef vma_recv_callback_retval_t (*vma_recv_callback_t)(int fd, size_t sz_iov, struct iovec iov[],
							   struct vma_info_t *vma_info, void *context);

/* Ring allocation logic (SO_VMA_RING_ALLOC_LOGIC). */
typedef enum {
	RING_LOGIC_PER_INTERFACE = 0,
	RING_LOGIC_PER_IP = 1,
	RING_LOGIC_PER_SOCKET = 10,
	RING_LOGIC_PER_USER_ID = 11,
	RING_LOGIC_PER_THREAD = 20,
	RING_LOGIC_PER_CORE = 30,
	RING_LOGIC_PER_CORE_ATTACH_THREADS = 31,
	RING_LOGIC_LAST
} ring_logic_t;

struct vma_ring_alloc_logic_attr {
	uint32_t comp_mask;
	ring_logic_t ring_alloc_logic;
	uint32_t ring_profile_key;
	uint32_t user_id;
	uint32_t ingress : 1;
	uint32_t engress : 1;
	uint32_t reserved : 30;
};

struct vma_cq_moderation_attr {
	uint32_t cq_moderation_count;
	uint32_t cq_moderation_period_usec;
};

struct vma_cq_arm_attr {
	uint32_t reserved;
};

struct vma_modify_ring_attr {
	uint32_t comp_bit_mask;
	int ring_fd;
	union {
		struct vma_cq_moderation_attr cq_moderation;
		struct vma_cq_arm_attr cq_arm;
	};
};

typedef enum { VMA_RING_PACKET, VMA_RING_EXTERNAL_MEM } vma_ring_type;

struct vma_ring_type_attr {
	uint32_t comp_mask;
	vma_ring_type ring_type;
	union {
		struct {
			uint32_t comp_mask;
		} ring_pktq;
		struct {
			uint32_t comp_mask;
		} ring_ext;
	};
};

/* Hardware descriptors: goxio has none to give (get_ring_direct_descriptors refuses). */
struct vma_mlx_hw_device_data;

/* Bits of vma_extra_supported_mask, one per member. */
typedef enum {
	VMA_EXTRA_API_REGISTER_RECV_CALLBACK = (1 << 0),
	VMA_EXTRA_API_RECVFROM_ZCOPY = (1 << 1),
	VMA_EXTRA_API_FREE_PACKETS = (1 << 2),
	VMA_EXTRA_API_ADD_CONF_RULE = (1 << 3),
	VMA_EXTRA_API_THREAD_OFFLOAD = (1 << 4),
	VMA_EXTRA_API_DUMP_FD_STATS = (1 << 5),
	VMA_EXTRA_API_SOCKETXTREME_POLL = (1 << 6),
	VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_PACKETS = (1 << 7),
	VMA_EXTRA_API_SOCKETXTREME_REF_VMA_BUFF = (1 << 8),
	VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_BUFF = (1 << 9),
	VMA_EXTRA_API_GET_SOCKET_RINGS_NUM = (1 << 10),
	VMA_EXTRA_API_GET_SOCKET_RINGS_FDS = (1 << 11),
	VMA_EXTRA_API_GET_SOCKET_TX_RING_FD = (1 << 12),
	VMA_EXTRA_API_GET_SOCKET_NETWORK_HEADER = (1 << 13),
	VMA_EXTRA_API_GET_RING_DIRECT_DESCRIPTORS = (1 << 14),
	VMA_EXTRA_API_ADD_RING_PROFILE = (1 << 16),
	VMA_EXTRA_API_REGISTER_MEMORY_ON_RING = (1 << 17),
	VMA_EXTRA_API_DEREGISTER_MEMORY_ON_RING = (1 << 18),
	VMA_EXTRA_API_MODIFY_RING = (1 << 20),
	VMA_EXTRA_API_IOCTL = (1 << 21)
} vma_extra_api_mask;

/* The extra API: 21 slots of 8 bytes, in VMA's order. */
struct __attribute__((packed)) vma_api_t {
	int (*register_recv_callback)(int s, vma_recv_callback_t callback, void *context);
	int (*recvfrom_zcopy)(int s, void *buf, size_t len, int *flags, struct sockaddr *from, socklen_t *fromlen);
	int (*free_packets)(int s, struct vma_packet_t *pkts, size_t count);
	int (*add_conf_rule)(const char *config_line);
	int (*thread_offload)(int offload, pthread_t tid);
	int (*socketxtreme_poll)(int fd, struct vma_completion_t *completions, unsigned int ncompletions, int flags);
	int (*get_socket_rings_num)(int fd);
	int (*get_socket_rings_fds)(int fd, int *ring_fds, int ring_fds_sz);
	int (*get_socket_tx_ring_fd)(int sock_fd, struct sockaddr *to, socklen_t tolen);
	int (*socketxtreme_free_vma_packets)(struct vma_packet_desc_t *packets, int num);
	int (*socketxtreme_ref_vma_buff)(struct vma_buff_t *buff);
	int (*socketxtreme_free_vma_buff)(struct vma_buff_t *buff);
	int (*dump_fd_stats)(int fd, int log_level);
	int (*vma_add_ring_profile)(struct vma_ring_type_attr *profile, int *key);
	int (*get_socket_network_header)(int fd, void *ptr, uint16_t *len);
	int (*get_ring_direct_descriptors)(int fd, struct vma_mlx_hw_device_data *data);
	int (*register_memory_on_ring)(int fd, void *addr, size_t length, uint32_t *key);
	int (*deregister_memory_on_ring)(int fd, void *addr, size_t length);
	int (*vma_modify_ring)(struct vma_modify_ring_attr *mr_data);
	uint64_t vma_extra_supported_mask;
	int (*ioctl)(void *cmsg_hdr, size_t cmsg_len);
};

/* goxio_get_api returns the extra API, or NULL when the library is not preloaded. */
static inline struct vma_api_t *goxio_get_api(void) {
	struct vma_api_t *api = NULL;
	socklen_t len = sizeof api;
	if (getsockopt(-1, SOL_SOCKET, SO_VMA_GET_API, &api, &len) < 0)
		return NULL;
	return api;
}

/* vma_get_api is VMA's name for it: programs written against vma_extra.h call it (sockperf does),
 * and build unchanged against this header. */
static inline struct vma_api_t *vma_get_api(void) { return goxio_get_api(); }

#ifdef __cplusplus
}
#endif

#endif

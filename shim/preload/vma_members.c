/*
 * vma_members.c: VMA's members that ask which sockets the library serves (get_socket_rings_num,
 * get_socket_rings_fds, get_socket_tx_ring_fd), that change what it serves (thread_offload), and those the engine answers
 * (add_conf_rule, dump_fd_stats, get_socket_network_header).
 */
#include "vma.h"
#include "trampoline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

uint8_t served(int fd) {
	uint8_t fl = goxio_fd_flags(fd);
	if (fl & GOXIO_FD_LAZY) {
		goxio_lazy_fd(fd);
		fl = goxio_fd_flags(fd);
	}
	if (!(fl & GOXIO_FD_ENGINE) || !goxio_active())
		return 0;
	return fl;
}

int vma_get_socket_rings_num(int fd) {
	uint8_t fl = served(fd);
	if (fl == 0) {
		errno = EINVAL;
		return -1;
	}
	return (fl & GOXIO_FD_RING) ? 1 : 0;
}

int vma_get_socket_rings_fds(int fd, int *ring_fds, int ring_fds_sz) {
	uint8_t fl = served(fd);
	if (fl == 0 || ring_fds == NULL || ring_fds_sz < 0) {
		errno = EINVAL;
		return -1;
	}
	if (!(fl & GOXIO_FD_RING) || ring_fds_sz == 0)
		return 0;
	ring_fds[0] = fd; /* readable through select, poll and epoll when the ring holds data */
	return 1;
}

int vma_get_socket_tx_ring_fd(int fd, struct sockaddr *to, socklen_t tolen) {
	uint8_t fl = served(fd);
	if (fl == 0) {
		errno = EINVAL;
		return -1;
	}
	if (!(fl & GOXIO_FD_RING)) {
		errno = ENODATA; /* served through the kernel: no ring */
		return -1;
	}
	return fd; /* one ring per socket, both ways */
}

/* ---- threads whose new sockets stay with the kernel (thread_offload) ---- */

#define MAX_KERNEL_THREADS 256

static pthread_mutex_t thr_mu = PTHREAD_MUTEX_INITIALIZER;
GOXIO_COLD static pthread_t kernel_threads[MAX_KERNEL_THREADS];

/* goxio_vma_kernel_threads counts the threads thread_offload(0, tid) named: socket() looks for its
 * thread among them only while it is not zero (calls_socket.c). */
GOXIO_HIDDEN volatile int goxio_vma_kernel_threads;

int vma_thread_offload(int offload, pthread_t tid) {
	pthread_mutex_lock(&thr_mu);
	int n = goxio_vma_kernel_threads, i = 0;
	while (i < n && !pthread_equal(kernel_threads[i], tid))
		i++;
	if (offload && i < n) {
		kernel_threads[i] = kernel_threads[n - 1];
		n--;
	} else if (!offload && i == n) {
		if (n == MAX_KERNEL_THREADS) {
			pthread_mutex_unlock(&thr_mu);
			errno = ENOMEM;
			return -1;
		}
		kernel_threads[n++] = tid;
	}
	__atomic_store_n(&goxio_vma_kernel_threads, n, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&thr_mu);
	return 0;
}

/* goxio_vma_thread_kernel reports whether sockets this thread makes stay with the kernel. */
GOXIO_HIDDEN int goxio_vma_thread_kernel(void) {
	pthread_t self = pthread_self();
	int found = 0;
	pthread_mutex_lock(&thr_mu);
	for (int i = 0; i < goxio_vma_kernel_threads && !found; i++)
		found = pthread_equal(kernel_threads[i], self);
	pthread_mutex_unlock(&thr_mu);
	return found;
}

/* ---- members the engine serves ---- */

/* engine_result turns the engine's 0 or -errno into the C convention. */
static int engine_result(long r) {
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

/* need_engine loads the engine if it is not yet; ENODEV when it cannot run here (a signal
 * handler, a vfork child, a forked child of a process that had it, a failed load). */
static int need_engine(void) {
	if (goxio_engine_need() && goxio_active())
		return 1;
	errno = ENODEV;
	return 0;
}

int vma_add_conf_rule(const char *line) {
	if (line == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (!need_engine())
		return -1;
	long r;
	GOXIO_ENTER(r = goxio_eng.vma_rule(line));
	return engine_result(r);
}

int vma_dump_fd_stats(int fd, int level) {
	if (!need_engine())
		return -1;
	long r;
	GOXIO_ENTER(r = goxio_eng.vma_dump(fd, level));
	return engine_result(r);
}

/* NETWORK_HEADER_LEN is the size of the headers get_socket_network_header gives: Ethernet II,
 * IPv4 without options, UDP. */
#define NETWORK_HEADER_LEN (14 + 20 + 8)

static void put16(unsigned char *p, unsigned v) {
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static void put_mac(unsigned char *p, uint64_t m) {
	for (int i = 0; i < 6; i++)
		p[i] = (unsigned char)(m >> (8 * (5 - i)));
}

/* vma_get_socket_network_header writes the Ethernet, IPv4 and UDP headers of the connected UDP
 * socket fd's datagrams: MACs, addresses, ports, TOS, TTL and the DF flag as they would be sent;
 * the fields that differ per datagram (lengths, IPv4 id, checksums) are zero. */
int vma_get_socket_network_header(int fd, void *ptr, uint16_t *len) {
	int type = 0;
	socklen_t tl = sizeof type;
	if (len == NULL || served(fd) == 0) {
		errno = EINVAL; /* not a socket the library serves */
		return -1;
	}
	struct sockaddr_in self = {0}, peer = {0};
	socklen_t sl = sizeof self, pl = sizeof peer;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_DGRAM ||
	    getsockname(fd, (struct sockaddr *)&self, &sl) != 0 || self.sin_family != AF_INET ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 || peer.sin_family != AF_INET) {
		errno = ENOTCONN; /* VMA's answer for a socket without a header: not a connected UDP one */
		return -1;
	}
	if (ptr == NULL || *len < NETWORK_HEADER_LEN) {
		*len = NETWORK_HEADER_LEN;
		if (ptr == NULL)
			return 0;
		errno = ENOBUFS;
		return -1;
	}
	int tos = 0, ttl = 64, pmtu = IP_PMTUDISC_WANT;
	socklen_t ol = sizeof tos;
	getsockopt(fd, IPPROTO_IP, IP_TOS, &tos, &ol);
	ol = sizeof ttl;
	getsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, &ol);
	ol = sizeof pmtu;
	getsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, &ol);
	uint64_t dmac = 0, smac = 0;
	if (!need_engine())
		return -1;
	long r;
	GOXIO_ENTER(r = goxio_eng.vma_macs(ntohl(self.sin_addr.s_addr), ntohl(peer.sin_addr.s_addr), &dmac, &smac));
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	unsigned char h[NETWORK_HEADER_LEN] = {0};
	put_mac(h, dmac);
	put_mac(h + 6, smac);
	put16(h + 12, 0x0800);
	unsigned char *ip = h + 14;
	ip[0] = 0x45;
	ip[1] = (unsigned char)tos;
	/* Linux sets DF on UDP unless path-MTU discovery is off (don't) */
	if (pmtu == IP_PMTUDISC_WANT || pmtu == IP_PMTUDISC_DO || pmtu == IP_PMTUDISC_PROBE)
		put16(ip + 6, 0x4000);
	ip[8] = (unsigned char)ttl;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &self.sin_addr, 4);
	memcpy(ip + 16, &peer.sin_addr, 4);
	unsigned char *udp = ip + 20;
	memcpy(udp, &self.sin_port, 2);
	memcpy(udp + 2, &peer.sin_port, 2);
	memcpy(ptr, h, sizeof h);
	*len = NETWORK_HEADER_LEN;
	return 0;
}

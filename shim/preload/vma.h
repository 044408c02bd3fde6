/*
 * vma.h: what the files of VMA's extra API (vma_*.c) share inside the preload library.
 */
#ifndef GOXIO_VMA_H
#define GOXIO_VMA_H

#include "preload.h"

#include "../goxio_extra.h"

/* RECORD_CAP holds the largest UDP datagram (65507 bytes) and a large TCP read. */
#define RECORD_CAP 65536

/* Held records (vma_records.c). rec_take reserves a record for fd: its slot, buffer (stable while
 * taken) and the handle the program sees as packet_id, or -1 with errno ENOMEM. rec_release
 * returns slot i. */
GOXIO_HIDDEN int rec_take(int fd, char **buf, void **handle);
GOXIO_HIDDEN void rec_release(int i);

/* goxio_vma_cbs counts the registered receive callbacks (vma_callback.c). */
GOXIO_HIDDEN extern volatile int goxio_vma_cbs;

/* served reports the table flags of a socket the engine serves, loading the engine first for a
 * socket made before it was; 0 for any other fd (vma_members.c). */
GOXIO_HIDDEN uint8_t served(int fd);

/* The members goxio provides. */
GOXIO_HIDDEN int vma_recvfrom_zcopy(int s, void *buf, size_t len, int *flags, struct sockaddr *from, socklen_t *fromlen);
GOXIO_HIDDEN int vma_free_packets(int s, struct vma_packet_t *pkts, size_t count);
GOXIO_HIDDEN int vma_register_recv_callback(int s, vma_recv_callback_t cb, void *ctx);
GOXIO_HIDDEN int vma_thread_offload(int offload, pthread_t tid);
GOXIO_HIDDEN int vma_get_socket_rings_num(int fd);
GOXIO_HIDDEN int vma_get_socket_rings_fds(int fd, int *ring_fds, int ring_fds_sz);
GOXIO_HIDDEN int vma_get_socket_tx_ring_fd(int fd, struct sockaddr *to, socklen_t tolen);
GOXIO_HIDDEN int vma_add_conf_rule(const char *line);
GOXIO_HIDDEN int vma_dump_fd_stats(int fd, int level);
GOXIO_HIDDEN int vma_get_socket_network_header(int fd, void *ptr, uint16_t *len);

#endif

/*
 * box.h: the per-fd boxes of ring records (box.c), shared by VMA's recvfrom_zcopy and free_packets
 * (vma_records.c) and the plain receives (read, recv, recvfrom, recvmsg: calls_io.c).
 */
#ifndef GOXIO_BOX_H
#define GOXIO_BOX_H

#include "preload.h"

/* box_of returns fd's box, making it with make (NULL when there is none, or no memory). */
GOXIO_HIDDEN struct goxio_zbox *box_of(int fd, int make);

/* box_take takes the oldest record queued in box b into *e: 1, with *epoch the box's; 0 when there
 * is none to take (none queued, or the engine has the front: it serves the next receive). */
GOXIO_HIDDEN int box_take(struct goxio_zbox *b, struct goxio_zent *e, uint32_t *epoch);

/* box_defer leaves token, a record of box b at epoch, in the box for the engine to fold in: 1, or 0
 * when the box is gone or full (the token goes to the engine now). *urgent is set when the engine
 * wants the frees at once. */
GOXIO_HIDDEN int box_defer(struct goxio_zbox *b, uint64_t token, uint32_t epoch, int *urgent);

/* spin_lock takes a spin lock held for a few loads and stores, spin_unlock releases it; the
 * program's signal handlers wait meanwhile (goxio_sig_defer). spin_release releases it with a
 * release store only, for a holder that loads nothing the other side stores after the release
 * (spin_unlock's store is sequentially consistent: a box's free reads urgent after it). */
GOXIO_HIDDEN void spin_lock(uint32_t *l);
GOXIO_HIDDEN void spin_unlock(uint32_t *l);
GOXIO_HIDDEN void spin_release(uint32_t *l);

/* kread_armed reports whether box b, whose lock is held, lets the library read the kernel socket
 * (offload/shm/hold_box_kread.go): attached, armed, and the inbox's sender generation still the
 * armed one (*kgenp lies in the inbox's mapping, which stays while the box is attached). The load
 * is sequentially consistent (a plain load on x86): goxio_kwait's count of itself comes before it,
 * in the one order the engine's sender and Quiet see. */
static inline int kread_armed(const struct goxio_zbox *b) {
	return b->attached && b->kread && b->kgenp != NULL && __atomic_load_n(b->kgenp, __ATOMIC_SEQ_CST) == b->kgen;
}

/* goxio_kwait waits for a blocking receive on fd whose kernel read (box b armed) found the kernel
 * socket empty (kwait.c): 1 when the kernel socket may have a datagram now (read again), 0 when
 * the receive is the engine's (ring data, or the box no longer armed for a wait here), -1 with
 * errno (EAGAIN at SO_RCVTIMEO's end, *deadline holding it across waits of one receive, 0 before
 * the first; EINTR; ppoll's error). */
GOXIO_HIDDEN int goxio_kwait(int fd, struct goxio_zbox *b, uint64_t *deadline);

/* goxio_box_fd reports whether fd's plain receives go through goxio_box_recv: a ring socket of
 * the engine (no spilled datagrams, not lazy). One byte load. */
static inline int goxio_box_fd(int fd) {
	return (goxio_fd_flags(fd) & (GOXIO_FD_ENGINE | GOXIO_FD_RING | GOXIO_FD_SPILL | GOXIO_FD_LAZY |
				      GOXIO_FD_INTERNAL)) == (GOXIO_FD_ENGINE | GOXIO_FD_RING);
}

/* goxio_box_recv serves a plain receive (op GOXIO_OP_READ or GOXIO_OP_RECVFROM, with recvfrom's
 * arguments; read's flags 0, no address) on fd, a ring socket of the engine: from the records
 * queued in its box when there are, else through the engine, which copies the datagram and queues
 * the ones waiting after it. 1 with the call's result in *ret (-1 and errno on failure); 0 when
 * the call is not one for the box (a peek, the error queue, MSG_OOB, a read of 0 bytes, a receive
 * callback, a signal handler: the trampoline goes on as before). The other flags are the engine's as the kernel's
 * UDP reads them: MSG_TRUNC gives the datagram's length, the rest change nothing here. */
GOXIO_HIDDEN int goxio_box_recv(int fd, int op, void *buf, size_t n, int flags, struct sockaddr *from,
				socklen_t *fromlen, long *ret);

/* goxio_box_recvmsg is goxio_box_recv for recvmsg (GOXIO_OP_RECVMSG): a copy from the box only
 * through a msghdr without a control buffer and with at most 8 buffers. */
GOXIO_HIDDEN int goxio_box_recvmsg(int fd, struct msghdr *msg, int flags, long *ret);

/* goxio_box_fd_new forgets what the plain receives learned of fd (box.c): the number names a new
 * socket of the engine. */
GOXIO_HIDDEN void goxio_box_fd_new(int fd);

#endif

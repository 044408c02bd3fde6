/*
 * kwait.c: a blocking receive of a kernel read (box.c, rx_kread) waits here, as the kernel's would.
 *
 * A goxio UDP socket whose datagrams all come through its kernel socket (clients without goxio,
 * or a socket per request, whose datagrams go through the kernel) has its box armed by the
 * engine (offload/shm hold_box_kread.go): no sender has a ring to it, so its plain receives read
 * the kernel socket themselves. One that blocks and finds the kernel socket empty entered the
 * engine, which spun (VMA_RX_POLL) and then slept on the kernel socket and the socket's doorbell.
 * Where the engine would not spin (VMA_RX_POLL 0, or waits typically longer than a spin is worth:
 * offload/transport/shm kread.go, kernelBell) that trip bought nothing, and the engine gives the
 * box the doorbell. Where it would, it keeps the wait: on a CPU shared with the peer its spin,
 * yielding, hands the CPU over without a wake-up (a socket per request, both ends on one CPU of
 * the 2-CPU test machine: 8.5 us a round; sleeping here 9.8 us, the kernel's 8.1 us).
 *
 * With the doorbell the receive sleeps here on both, as the engine's sleep does, without the
 * engine: ppoll on the kernel socket and the doorbell, then the kernel read again. Lost wake-ups:
 * a sender registers its ring (bumping the inbox's generation) before it writes its first record
 * and then asks for a wake-up (the inbox's wake-up word 0 -> 1, offload/shm wake.go) and rings
 * the doorbell, which stays readable until a receive that found the rings empty drains it. The
 * wait counts itself in the box (ksleep: the engine rings for it as for its own sleepers, and an
 * edge-triggered epoll leaves the doorbell alone) and then, under the box's lock, finds the
 * generation the armed one and the wake-up word 0: a sender that registered before that look is
 * seen, one after it rings the doorbell this wait sleeps on. A stale wake-up word (1 with nothing
 * to ring for) is the engine's to settle: the receive enters it. The doorbell ringing, the wait
 * ends and the receive enters the engine, which takes the ring's datagram.
 *
 * As the kernel's receive: SO_RCVTIMEO (the box's ktimeo, which the engine updates when the program
 * sets it) ends the wait with EAGAIN; a program's handler that ran ends it with EINTR unless it
 * has SA_RESTART and the socket no timeout (sock_intr_errno), as in early_wait.c; a thread
 * cancelled in ppoll (a cancellation point, as recvfrom is) uncounts itself.
 */
#include "box.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>

static void kwait_uncount(void *b) { __atomic_sub_fetch(&((struct goxio_zbox *)b)->ksleep, 1, __ATOMIC_SEQ_CST); }

int goxio_kwait(int fd, struct goxio_zbox *b, uint64_t *deadline) {
	__atomic_add_fetch(&b->ksleep, 1, __ATOMIC_SEQ_CST); /* before the look below */
	spin_lock(&b->lock);
	int bell = -1;
	int64_t timeo = 0;
	if (kread_armed(b) && b->kwake != NULL && b->kbell >= 0 && __atomic_load_n(b->kwake, __ATOMIC_SEQ_CST) == 0) {
		bell = b->kbell;
		timeo = b->ktimeo;
	}
	spin_release(&b->lock);
	if (bell < 0) {
		kwait_uncount(b);
		return 0;
	}
	struct timespec ts, *tp = NULL;
	if (timeo > 0) {
		uint64_t now = goxio_clock_ns(CLOCK_MONOTONIC);
		if (*deadline == 0)
			*deadline = now + (uint64_t)timeo;
		uint64_t left = *deadline > now ? *deadline - now : 0;
		ts.tv_sec = (time_t)(left / 1000000000u);
		ts.tv_nsec = (long)(left % 1000000000u);
		tp = &ts;
	}
	struct goxio_sig_counters *sc = goxio_sig_counters();
	unsigned all = __atomic_load_n(&sc->all, __ATOMIC_RELAXED);
	unsigned intr = __atomic_load_n(&sc->interrupting, __ATOMIC_RELAXED);
	struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = bell, .events = POLLIN}};
	int n;
	pthread_cleanup_push(kwait_uncount, b);
	n = REAL(ppoll)(p, 2, tp, NULL);
	pthread_cleanup_pop(1);
	if (n > 0)
		return p[1].revents != 0 ? 0 : 1; /* the doorbell: ring data, the engine takes it */
	if (n == 0) {
		errno = EAGAIN; /* SO_RCVTIMEO */
		return -1;
	}
	if (errno != EINTR)
		return -1;
	if (__atomic_load_n(&sc->all, __ATOMIC_RELAXED) == all)
		return 1; /* none of the program's handlers ran: wait on */
	if (__atomic_load_n(&sc->interrupting, __ATOMIC_RELAXED) != intr || timeo > 0)
		return -1; /* EINTR */
	return 1;	   /* SA_RESTART on a socket without a timeout: the kernel restarts its wait */
}

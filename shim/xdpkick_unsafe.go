package main

// The AF_XDP transport's kicker (offload/transport/xdp/kick.go): a thread outside Go that makes
// the kernel send the frames a stream of sends left on a TX ring to share one kick, when no call
// of the program did it within the delay (the program sleeps, blocks in a call the library does
// not see, or exits with _exit). It sleeps in futex_wait while no frame waits: an idle process
// uses no CPU. It runs no Go and calls no intercepted function: raw system calls only, every
// signal blocked (the program's handlers never run on it).
//
// Shared words, in C memory: state (0: the thread sleeps until armed; 1: armed) and one word per
// slot (the Nanotime of the slot's oldest unkicked frame, 0: none). Go writes them with
// sync/atomic and C with the __atomic builtins, all sequentially consistent: the transport
// stores a slot word and then reads state (Arm); the thread stores state 0 and then reads every
// slot word once more before it sleeps, so one of them sees the other's store.

/*
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/futex.h>

#define GOXIO_KICK_SLOTS 64

static int32_t goxio_kick_state;
static int64_t goxio_kick_since[GOXIO_KICK_SLOTS];
static int goxio_kick_fd[GOXIO_KICK_SLOTS]; // 0: free; fd+1 otherwise; under goxio_kick_mu
static pthread_mutex_t goxio_kick_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t goxio_kick_delay;  // ns
static int64_t goxio_kick_offset; // CLOCK_MONOTONIC minus Go's Nanotime, ns
static int goxio_kick_started;    // under goxio_kick_mu

static int64_t goxio_kick_mono(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// goxio_kick_fd_now makes the kernel send what waits on the TX ring of fd (copy mode sends 32
// frames a call and answers EAGAIN while more wait).
static void goxio_kick_fd_now(int fd) {
	for (int i = 0; i < 64; i++) {
		long r = syscall(SYS_sendto, fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
		if (r >= 0 || (errno != EAGAIN && errno != EBUSY))
			return;
	}
}

static int goxio_kick_any(void) {
	for (int i = 0; i < GOXIO_KICK_SLOTS; i++)
		if (__atomic_load_n(&goxio_kick_since[i], __ATOMIC_SEQ_CST) != 0)
			return 1;
	return 0;
}

static void *goxio_kick_main(void *arg) {
	(void)arg;
	for (;;) {
		while (__atomic_load_n(&goxio_kick_state, __ATOMIC_SEQ_CST) == 0)
			syscall(SYS_futex, &goxio_kick_state, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		int64_t now = goxio_kick_mono() - goxio_kick_offset;
		int64_t next = 0;
		int pending = 0;
		pthread_mutex_lock(&goxio_kick_mu);
		for (int i = 0; i < GOXIO_KICK_SLOTS; i++) {
			if (goxio_kick_fd[i] == 0)
				continue;
			int64_t s = __atomic_load_n(&goxio_kick_since[i], __ATOMIC_SEQ_CST);
			if (s == 0)
				continue;
			if (now - s >= goxio_kick_delay &&
			    __atomic_compare_exchange_n(&goxio_kick_since[i], &s, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
				goxio_kick_fd_now(goxio_kick_fd[i] - 1);
				continue;
			}
			pending = 1;
			int64_t due = now - s >= goxio_kick_delay ? now + goxio_kick_delay : s + goxio_kick_delay;
			if (next == 0 || due < next)
				next = due;
		}
		pthread_mutex_unlock(&goxio_kick_mu);
		if (!pending) {
			__atomic_store_n(&goxio_kick_state, 0, __ATOMIC_SEQ_CST);
			if (goxio_kick_any())
				__atomic_store_n(&goxio_kick_state, 1, __ATOMIC_SEQ_CST);
			continue;
		}
		next += goxio_kick_offset;
		struct timespec ts = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	return NULL;
}

// goxio_kick_slot registers fd and returns its slot, starting the thread the first time; -1
// when no slot is left or the thread cannot start.
static int goxio_kick_slot(int fd, int64_t delay, int64_t offset) {
	int slot = -1;
	pthread_mutex_lock(&goxio_kick_mu);
	if (!goxio_kick_started) {
		goxio_kick_delay = delay;
		goxio_kick_offset = offset;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		pthread_t t;
		if (pthread_create(&t, &attr, goxio_kick_main, NULL) == 0) {
			pthread_detach(t);
			pthread_setname_np(t, "goxio-kick");
			goxio_kick_started = 1;
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	for (int i = 0; goxio_kick_started && i < GOXIO_KICK_SLOTS; i++) {
		if (goxio_kick_fd[i] == 0) {
			goxio_kick_fd[i] = fd + 1;
			__atomic_store_n(&goxio_kick_since[i], 0, __ATOMIC_SEQ_CST);
			slot = i;
			break;
		}
	}
	pthread_mutex_unlock(&goxio_kick_mu);
	return slot;
}

// goxio_kick_release frees a slot: the thread does not use its fd once this returns.
static void goxio_kick_release(int slot) {
	pthread_mutex_lock(&goxio_kick_mu);
	goxio_kick_fd[slot] = 0;
	__atomic_store_n(&goxio_kick_since[slot], 0, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&goxio_kick_mu);
}

static void goxio_kick_wake(void) {
	syscall(SYS_futex, &goxio_kick_state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static int64_t *goxio_kick_word(int slot) { return &goxio_kick_since[slot]; }
static int32_t *goxio_kick_state_word(void) { return &goxio_kick_state; }
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/goxio/goxio/offload/transport/udpcall"
)

// cKicker is the transport's xdptr.Kicker: the C thread above. delay is how long a deferred
// frame may wait for the program's next call before the thread kicks it (ns).
type cKicker struct {
	delay int64

	mu    sync.Mutex
	slots map[*atomic.Int64]C.int
}

// Invariant: goxio_kick_since and goxio_kick_state are static C arrays and words, never freed or
// moved, 8- and 4-byte aligned: pointers to them are valid *atomic.Int64 and *atomic.Int32 for
// the life of the process.
var kickState = (*atomic.Int32)(unsafe.Pointer(C.goxio_kick_state_word()))

func (k *cKicker) Slot(fd int) *atomic.Int64 {
	offset := int64(C.goxio_kick_mono()) - udpcall.Nanotime()
	i := C.goxio_kick_slot(C.int(fd), C.int64_t(k.delay), C.int64_t(offset))
	if i < 0 {
		return nil
	}
	w := (*atomic.Int64)(unsafe.Pointer(C.goxio_kick_word(i)))
	k.mu.Lock()
	if k.slots == nil {
		k.slots = map[*atomic.Int64]C.int{}
	}
	k.slots[w] = i
	k.mu.Unlock()
	return w
}

func (k *cKicker) Release(w *atomic.Int64) {
	k.mu.Lock()
	i, ok := k.slots[w]
	delete(k.slots, w)
	k.mu.Unlock()
	if ok {
		C.goxio_kick_release(i)
	}
}

func (k *cKicker) Arm() {
	if kickState.Load() == 0 && kickState.CompareAndSwap(0, 1) {
		C.goxio_kick_wake()
	}
}

/*
 * goxio.h: the contract between the two libraries.
 *
 * libgoxio.so (shim/preload, plain C) is the library programs preload: trampolines, the fd table,
 * real functions, fork and signal wrappers, the spill reader. libgoxio-engine.so (shim, Go
 * c-shared) is the engine, loaded with dlopen by the first call that needs it (loader.c). They
 * meet in one call: the preload library calls goxio_engine_init with a struct goxio_host (what the
 * engine may use of the C side) and gets back a struct goxio_engine (the engine's entry points).
 * Everything here is shared by both; each keeps its private parts in its own header.
 */
#ifndef GOXIO_CONTRACT_H
#define GOXIO_CONTRACT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdint.h>
#include <sys/select.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#define GOXIO_HIDDEN __attribute__((visibility("hidden")))

/* Size of the C-side fd table; fds at or above it are always passed through. */
#define GOXIO_FDT_SIZE (1u << 20)

/* Flags of a table byte. */
enum {
	GOXIO_FD_ENGINE = 1,   /* a socket object of the engine: every call on the fd enters Go */
	GOXIO_FD_INTERNAL = 2, /* the library's own fd: invisible to the program (EBADF) */
	GOXIO_FD_WATCH = 4,    /* passed through, but close/dup2 onto it tell the engine (stats slot) */
	GOXIO_FD_RING = 8,     /* a socket whose readiness is partly in user-space rings: select, poll
				  and epoll_ctl on it enter the engine */
	GOXIO_FD_EPOLL = 16,   /* an epoll fd with ring sockets in it: epoll_wait enters the engine */
	GOXIO_FD_SPILL = 32,   /* a socket whose ring datagrams were spilled at a fork (spill.c): its
				  receives take them first, in the parent and in the child */
	GOXIO_FD_LAZY = 64,    /* an AF_INET TCP or UDP socket made before the engine was loaded: a
				  data call or a wait on it loads the engine, which adopts it */
	GOXIO_FD_LAZY_EPOLL = 128, /* an epoll fd that got a GOXIO_FD_LAZY member: epoll_wait on it
				      loads the engine, which adopts the set */
};

/* Per-thread counts of the program's signal handlers that ran on the thread: all of them, those
 * without SA_RESTART, and those deferred because the signal came while the thread ran the
 * engine's code (they run when the call is back in C: shim/preload/signal.c); the same three as
 * they were when the thread's current call entered the engine (GOXIO_GO), which the engine's
 * waits compare with; and the timeout of the engine's next sleep in the kernel, which a deferral
 * zeroes (a signal that comes after the wait's last look and before its sleep ends the sleep at
 * once instead of never). */
struct goxio_sig_counters {
	unsigned int all;
	unsigned int interrupting;
	unsigned int deferred;
	unsigned int entry_all;
	unsigned int entry_interrupting;
	unsigned int entry_deferred;
	long long wake_sec;
	long long wake_nsec;
};

/* Operation codes passed to the engine's single entry point. Kept in sync with offload/op.go
 * (a test compares them). */
enum goxio_op {
	GOXIO_OP_SOCKET = 1, /* a0=domain a1=type a2=protocol: the kernel socket exists as fd */
	GOXIO_OP_CLOSE,
	GOXIO_OP_SHUTDOWN,
	GOXIO_OP_BIND,
	GOXIO_OP_LISTEN,
	GOXIO_OP_ACCEPT4,
	GOXIO_OP_CONNECT,
	GOXIO_OP_GETSOCKNAME,
	GOXIO_OP_GETPEERNAME,
	GOXIO_OP_SETSOCKOPT,
	GOXIO_OP_GETSOCKOPT,
	GOXIO_OP_READ,
	GOXIO_OP_READV,
	GOXIO_OP_RECVFROM,
	GOXIO_OP_RECVMSG,
	GOXIO_OP_RECVMMSG,
	GOXIO_OP_WRITE,
	GOXIO_OP_WRITEV,
	GOXIO_OP_SENDTO,
	GOXIO_OP_SENDMSG,
	GOXIO_OP_SENDMMSG,
	GOXIO_OP_SENDFILE,
	GOXIO_OP_FCNTL,
	GOXIO_OP_IOCTL,
	GOXIO_OP_DUP,   /* a0 = new fd made by the kernel (dup, dup2, dup3, F_DUPFD): register it */
	GOXIO_OP_FORGET, /* the fd was closed or replaced outside the engine: drop bookkeeping */
	GOXIO_OP_POLL,   /* fd -1; a0=pollfd* a1=nfds a2=timespec* or 0 (forever) a3=sigmask* or 0
			    a4=the thread's struct goxio_sig_counters* */
	GOXIO_OP_SELECT, /* fd -1; a0=nfds a1..a3=fd_set* a4=struct goxio_select_args* */
	GOXIO_OP_EPOLL_CTL,  /* fd = target; a0=epfd a1=op a2=epoll_event* */
	GOXIO_OP_EPOLL_WAIT, /* fd = epfd; a0=events a1=maxevents a2=timespec* or 0 a3=sigmask* or 0
				a4=the thread's struct goxio_sig_counters* */
	GOXIO_OP_ZCOPY_RECV, /* VMA's recvfrom_zcopy: a0=struct goxio_zcopy* */
	GOXIO_OP_ZCOPY_FREE, /* VMA's free_packets: a0=uint64_t tokens the receives gave, a1=their number (at
				most 64; 0: only the frees deferred in the socket's box, which always go
				first); -ENOENT when any was not held (the others are freed) */
	GOXIO_OP_MAX
};

/* A zero-copy receive (GOXIO_OP_ZCOPY_RECV): a recvfrom into buf, except that a datagram from a
 * shared-memory ring stays where it is, held for the program until GOXIO_OP_ZCOPY_FREE of token;
 * data then points at it (NULL: the datagram was copied into buf). The result is the datagram's
 * length, or -errno. */
struct goxio_zcopy {
	void *buf;
	size_t len;
	int flags;
	int op; /* 0: recvfrom_zcopy; GOXIO_OP_READ or GOXIO_OP_RECVFROM: that plain receive (buf, len,
		   flags, from, fromlen its arguments), GOXIO_OP_RECVMSG: recvmsg (buf the msghdr,
		   flags), which copies the datagram and may queue the ones after it in box
		   (shim/preload/box.c); data and token stay 0 */
	struct sockaddr *from;
	socklen_t *fromlen;
	void *data;     /* out */
	uint64_t token; /* out */
	struct goxio_zbox *box; /* in: the socket's box (below), or NULL */
	uint32_t epoch;         /* out: the box's epoch when the engine uses it for this socket, else 0 */
	uint32_t queued;        /* out: records the call queued in the box */
	uint32_t advice;        /* out, for a plain receive: GOXIO_ZCOPY_* */
	uint32_t pad_;
};

/* Advice of a plain receive (goxio_zcopy.op): the socket never queues in a box (a stream socket:
 * its plain receives need not ask again), or it would with one (make the fd's box). */
#define GOXIO_ZCOPY_NOBOX 1u
#define GOXIO_ZCOPY_BOX 2u

/* A box: zero-copy receive without entering the engine for each datagram (vma_records.c,
 * offload/shm/hold_box.go). The preload library keeps one per fd (memory it owns, never freed);
 * the engine attaches the box to the socket's inbox at a zero-copy receive, queues in it the
 * datagrams that wait in the rings after the one it hands over (each held in its ring as if
 * received), and detaches it when the fd stops naming the socket (close, dup2 over it) or the
 * socket closes. recvfrom_zcopy takes the oldest queued record without entering the engine;
 * free_packets leaves the tokens of freed ring records in freed[], which the engine folds in at its
 * next look at the inbox, unless urgent says the senders need the space now (a ring more than
 * half held, or one whose sender is gone). The engine's own receives on the socket take queued
 * records first (front: the oldest is with the engine, the library takes none until it is back),
 * so order and readiness are as if the records were still in the rings. Every field is read and
 * written under lock (a spin lock, held for a few loads and stores) except urgent, which is
 * read after the free it follows is published. */
#define GOXIO_ZBOX_ENTRIES 32
#define GOXIO_ZBOX_FREES 64

/* goxio_host.early_listener's domain for a listener whose connections are the kernel's for good. */
#define GOXIO_LISTENER_PLAIN 255

struct goxio_zent {
	uint64_t token;
	void *data;
	uint32_t len;
	uint32_t namelen;
	unsigned char name[32];
};

struct goxio_zbox {
	uint32_t lock;
	uint32_t attached; /* the engine uses it for the socket of this fd */
	uint32_t epoch;    /* bumped at every attach: records of an earlier socket do not match */
	uint32_t front;
	uint32_t head;     /* the oldest queued record: ent[head] */
	uint32_t count;
	uint32_t urgent;
	uint32_t nfree;
	uint64_t freed[GOXIO_ZBOX_FREES];
	struct goxio_zent ent[GOXIO_ZBOX_ENTRIES];
	/* Kernel read (offload/shm/hold_box_kread.go): while kread is 1, the box attached and the
	 * inbox's sender generation (*kgenp, a word of the inbox's mapping, readable while the box is
	 * attached) still kgen, no sender has a ring to the socket: a plain receive reads the kernel
	 * socket without entering the engine and counts into krx (the statistics slot's kernel
	 * receive words: packets, bytes, EAGAIN, errors); knb: the socket is non-blocking (an empty
	 * kernel socket is then the receive's EAGAIN). Written by the engine under lock; the library
	 * clears kread, under lock, when it finds the generation moved.
	 * A blocking receive that finds the kernel socket empty waits in the library (kwait.c,
	 * goxio_kwait) on the kernel socket and the socket's doorbell kbell (-1: the engine waits,
	 * spinning first), while the inbox's wake-up word (*kwake, a word of the inbox's mapping, readable
	 * while the box is attached) is 0, for at most ktimeo ns (SO_RCVTIMEO; 0: no limit);
	 * ksleep counts the threads waiting so (the engine rings for them as for its own). */
	uint32_t kread;
	uint32_t knb;
	uint64_t kgen;
	const volatile uint64_t *kgenp;
	uint64_t *krx;
	const volatile uint32_t *kwake;
	int64_t ktimeo;
	int32_t kbell;
	int32_t ksleep;
};

/* The rest of select's arguments: tv (select, updated with the time left as Linux does) or ts
 * (pselect), and pselect's signal mask. */
struct goxio_select_args {
	struct timeval *tv;
	const struct timespec *ts;
	const sigset_t *mask;
	struct goxio_sig_counters *sig;
};

/* How a socket made before the engine loaded came to be, as far as the kernel cannot tell it
 * later (struct goxio_lazy_info, handed to the engine's adopt). */
enum {
	GOXIO_LAZY_ACCEPTED = 1,  /* accepted on listener `ref` */
	GOXIO_LAZY_CONNECTED = 2, /* connect was called with `peer` (it may still be in progress) */
	GOXIO_LAZY_MCAST = 4,     /* an IPPROTO_IP option was set (multicast membership, filters) */
	GOXIO_LAZY_LISTENING = 8, /* listen succeeded: waiting on it needs no engine (accept is the
				     kernel's); its accepted connections are lazy sockets */
	GOXIO_LAZY_FORKED = 16,   /* the process forked while it had the socket: the socket is shared
				     with another process, and stays with the kernel unless ... */
	GOXIO_LAZY_CHILD = 32,    /* ... this process is the child and its parent no longer has it */
	GOXIO_LAZY_RCVBUF = 64,   /* the program set SO_RCVBUF or SO_RCVBUFFORCE (a value the kernel
				     reports cannot tell from its default) */
	GOXIO_LAZY_KERNEL_DST = 128, /* a UDP socket that sent to the destination in early.key
					(early.keyed bytes, a sockaddr) through the kernel, which may
					have a goxio receiver (shim/preload/early.c) */
};

/* GOXIO_KSEND_COUNTERS: the words a ksend_fd counter pointer names (tx packets, tx bytes, tx
 * EAGAIN, tx errors: a socket's kernel send counters). */
#define GOXIO_KSEND_COUNTERS 4

struct goxio_lazy_info {
	uint32_t how;
	int32_t ref;
	struct sockaddr_in peer; /* sin_family 0: none */
	/* the sends the preload library made to the kernel itself before the engine loaded
	 * (destinations without a goxio receiver: lazy_ksend.c), added to the socket's statistics */
	uint64_t tx[GOXIO_KSEND_COUNTERS];
	/* connect's address when it was IPv6 (the preload library's alone: the engine reads the
	 * peer of an IPv6 socket from the kernel); sin6_family 0: none */
	struct sockaddr_in6 peer6;
	/* the preload library's alone: the last destination (ksend.c's key) a send found without
	 * a goxio receiver, and the directory generation + 1 it was found at (lazy_ksend.c) */
	uint64_t vkey, vgen;
	/* the preload library's alone: a TCP connection or a UDP socket in its early phase
	 * (shim/preload/early.c); for a UDP socket, key holds its destination (keyed: its length),
	 * krx and ktx the datagrams and bytes it received, calls its data calls */
	struct {
		uint64_t key[5];    /* the connection's pairing key (shim/preload/pairs.h), once keyed */
		uint64_t word;      /* connecting end: its pairing entry's word 0 as published */
		uint64_t since;     /* accepting end: CLOCK_MONOTONIC nanoseconds at accept */
		uint64_t krx, ktx;  /* bytes the connection moved through the kernel so far */
		int32_t slot;       /* connecting end: its pairing entry (-1: none) */
		int32_t listener;   /* accepting end: the listener it was accepted on */
		int32_t calls;      /* connecting end: its data calls so far */
		int32_t inflight;   /* data calls in the kernel now */
		uint32_t keyed;     /* accepting end: key is set */
	} early;
};

/* What the preload library hands the engine with a TCP connection or a UDP socket it served in its
 * early phase (goxio_engine.early, shim/preload/early.c). */
struct goxio_early_handover {
	int32_t how;      /* GOXIO_LAZY_ACCEPTED (on `listener`) or GOXIO_LAZY_CONNECTED */
	int32_t listener;
	int32_t domain, type, protocol; /* as socket() gave them; type with SOCK_NONBLOCK as it is now */
	int32_t calls;    /* data calls so far, the handing-over one included (connecting end) */
	int32_t options;  /* not 0: the program set options the engine follows (read them back) */
	int32_t nopair;   /* not 0: a data call may still be in the kernel, its bytes uncounted: the
			     connection must stay on the kernel */
	int32_t shut;     /* the program shut it down: 1 for reading, 2 for writing (bits) */
	uint64_t krx, ktx; /* bytes received and sent through the kernel */
	uint64_t age_ns;   /* since accept (accepting end) */
	/* A UDP socket that sent to dst through the kernel in its early phase (how is 0 then). */
	int32_t udp;
	uint64_t tx[4];  /* its sends through the kernel: packets, bytes, EAGAIN, other errors */
	uint64_t rx[2];  /* its receives from the kernel: datagrams, bytes */
	uint8_t dst[28]; /* its destination: a struct sockaddr_in or sockaddr_in6 */
};

/* An outlet's producer (offload/shm prod_unsafe.go, prodState; TestProdLayout checks the offsets):
 * the sending side of one shared-memory UDP ring, in memory the engine maps for the process's
 * life and reuses for another outlet only with another epoch. The engine's sends and the preload
 * library's (shim/preload/rsend.c) append records under lock, a spin lock held for one record's
 * copy; every other field is read and written under it. */
struct goxio_prod {
	uint32_t lock;
	uint32_t open;        /* 1 while ring and inbox are mapped and the outlet takes sends */
	uint64_t epoch;       /* names the outlet: 0 once closed */
	uint64_t tail;        /* authoritative tail, published to the ring's tail word */
	uint64_t head_cache;  /* last validated head */
	uint64_t pushed, drops, wakes;
	uint64_t capacity;    /* of the data area, a power of two */
	uint64_t ring;        /* address of the ring's mapping (shim/preload/ring_layout.h) */
	uint64_t inbox;       /* address of the inbox's mapping (its header page) */
	uint64_t st_tx;       /* address of the statistics ring's tx packets word (tx bytes the next); 0: none */
	uint64_t st_wake;     /* address of its wake-ups sent word; 0: none */
	uint64_t pad_[4];
};

/* A route of an fd's sends that the preload library serves itself (rsend.c): the engine's
 * description of the last ring route a send of the fd took, valid while every condition it names
 * still holds (checked at each send; any other case enters the engine). */
#define GOXIO_TXROUTE_BELL 64
struct goxio_txroute {
	uint64_t key;         /* the destination's ksend key (ksend.c); 0: no route */
	uint32_t peer;        /* 1: sends that name no destination go there too (the connected peer) */
	uint32_t max;         /* the largest payload the ring takes for it */
	uint32_t family;      /* the family of the address the program named (the kernel judges another) */
	uint32_t pad_;
	uint64_t gen;         /* the discovery directory's generation the route was made at */
	uint64_t prod;        /* address of the outlet's struct goxio_prod */
	uint64_t epoch;       /* the outlet's epoch in it */
	uint64_t gate;        /* address of the socket's gate word: gate_val while the socket allows it */
	uint64_t gate_val;
	uint64_t kcount;      /* address of the socket's kernel sends count: kseen while no send went
				 through the kernel since (order across the two paths) */
	uint64_t kseen;
	uint64_t sock_tx;     /* address of the socket's ring tx packets and bytes words */
	int32_t ringer;       /* the engine's socket that rings doorbells (-1: none) */
	uint32_t bell_len;    /* the receiver's doorbell: a sockaddr_un of bell_len bytes */
	uint8_t bell[GOXIO_TXROUTE_BELL];
	uint32_t namelen;     /* the record's name (the source as the receiver's family has it) */
	uint8_t name[44];
};

/* What the preload library gives the engine (goxio_engine_init). Every function is safe to call
 * from any thread. */
struct goxio_host {
	uint32_t size; /* sizeof(struct goxio_host): a mismatched pair of libraries refuses to start */
	void (*fdt_set)(int fd, int flags);
	int (*fdt_get)(int fd);
	uint64_t (*fdt_tag)(int fd);
	int (*internal_adopt)(int fd, int *owner);
	struct goxio_sig_counters *(*sig_counters)(void);
	void (*spill_set)(int fd, void *region);
	void (*set_ready)(int ready);
	int *quiet_threads; /* goxio_quiet_threads of boundary.c */
	int main_is_go;
	/* Sends to destinations without a goxio receiver go from the trampoline to the kernel
	 * (shim/preload/ksend.c). ksend_setup: the discovery directory's generation word, mapped by
	 * the engine for the process's life, and the statistics segment's capture word (not 0 while
	 * goxio capture may be attached, which records kernel sends too: no shortcut then; NULL:
	 * none), and the statistics' word that counts the sockets the preload library kept on the
	 * kernel without the engine (late.c; NULL: none); it returns two words: [0] a kernel send of
	 * the shortcut sets (not 0: the kernel may have woken a thread onto this CPU, the engine's
	 * next spin yields once, offload/internal/wait handoff.go), [1] a doorbell rung by a ring send
	 * of the trampoline sets (rsend.c: the next spin looks at the crowd, wait.Woke); ksend_put: no
	 * goxio socket is bound to dst (a sockaddr_in or sockaddr_in6) at generation gen; ksend_fd:
	 * sendto on fd may take the shortcut, counting into counters (its statistics slot's kernel tx
	 * packets, bytes, EAGAIN, errors; NULL: none);
	 * ksend_drop: it may not (any more); ksend_peer: fd's connected peer (NULL: none), the
	 * destination of its sends that name none (send, write). */
	uint32_t *(*ksend_setup)(const uint64_t *gen, const uint64_t *capture, uint64_t *plain);
	void (*ksend_put)(const struct sockaddr *dst, socklen_t len, uint64_t gen);
	/* ksend_put_tcp: no goxio socket listens at dst at generation gen (late.c), or (goxio) one
	 * does (early.c) */
	void (*ksend_put_tcp)(const struct sockaddr *dst, socklen_t len, uint64_t gen, int goxio);
	void (*ksend_fd)(int fd, uint64_t *counters);
	void (*ksend_drop)(int fd);
	void (*ksend_peer)(int fd, const struct sockaddr *peer, socklen_t len);
	/* vma_api_used: not 0 once the program was handed VMA's extra API with its members: its
	 * sockets then keep the engine on the kernel path (the members serve only the engine's
	 * sockets), instead of passing through for good. */
	const volatile int *vma_api_used;
	/* nofile_cur: the program's soft RLIMIT_NOFILE before the load (-1: unknown or infinite).
	 * The Go runtime's syscall package raises it to the hard limit - 1 when it initialises
	 * (go.dev/issue/46279); the engine puts the program's own back before anything else. */
	int64_t nofile_cur;
	/* early_setup: the pairing table (mapped by the engine for the process's life), the start
	 * time its entries carry, the connecting end's data calls before pairing, the accepting
	 * end's attach grace, the statistics' word that counts the connections closed in their early
	 * phase (NULL: none) (shim/preload/early.c). early_listener: fd, a listener of the given
	 * domain published in the discovery directory, accepts connections that pair late: accept
	 * may serve it in C (0: not any more); GOXIO_LISTENER_PLAIN for domain: the connections it
	 * accepts are the kernel's for good (no ring transport for them), accept makes them plain
	 * fds in C. */
	void (*early_setup)(uint64_t *pairs, uint64_t start, int pair_after, uint64_t grace_ns, uint64_t *closed);
	void (*early_listener)(int fd, int domain);
	/* early_spin: a blocking receive of a UDP socket in its early phase polls before it sleeps
	 * (on: the engine's VMA_RX_POLL is not 0) (shim/preload/early_wait.c). */
	void (*early_spin)(int on);
	/* Sends to a goxio receiver go from the trampoline into its ring (shim/preload/rsend.c).
	 * rsend_set: fd's sends to dst (route's key is made from it) may take route (copied);
	 * rsend_drop: they may not (any more). */
	void (*rsend_set)(int fd, const struct goxio_txroute *route, const struct sockaddr *dst, socklen_t len);
	void (*rsend_drop)(int fd);
};

/* The engine's entry points (filled by goxio_engine_init). */
struct goxio_engine {
	uint32_t size; /* sizeof(struct goxio_engine) */
	long (*call)(int op, int fd, uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4);
	void (*prefork)(void);
	void (*exit)(void);
	void (*threads)(int n);
	/* adopt registers fd, a socket or epoll set the process made before the engine loaded. */
	void (*adopt)(int fd, const struct goxio_lazy_info *info);
	/* prespawn hands the ring sockets a spawned child inherits back to the kernel (all: every
	 * one) before posix_spawn, system or popen. */
	void (*prespawn)(int all);
	/* VMA's extra API (shim/preload/vma_extra.c): add_conf_rule and dump_fd_stats; 0 or -errno. */
	long (*vma_rule)(const char *line);
	long (*vma_dump)(int fd, int level);
	/* get_socket_network_header's MACs: src and dst IPv4 in host order; MACs in the low 48 bits */
	long (*vma_macs)(uint32_t src, uint32_t dst, uint64_t *dst_mac, uint64_t *src_mac);
	/* early takes over fd, a TCP connection the preload library served in its early phase
	 * (shim/preload/early.c), with what happened meanwhile. */
	void (*early)(int fd, const struct goxio_early_handover *h);
};

/* goxio_engine_init is the one call of the preload library into the engine after dlopen: it
 * keeps host, fills engine, starts the engine (banner, statistics segment, rules) and returns 1
 * when the engine is ready, 0 when it decided not to run (the reason is logged). */
typedef int (*goxio_engine_init_fn)(const struct goxio_host *host, struct goxio_engine *engine);

#endif

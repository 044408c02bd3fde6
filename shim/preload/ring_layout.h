/*
 * ring_layout.h: the shared-memory UDP ring's layout as the preload library's sends write it
 * (rsend.c). The Go package offload/shm (layout.go, token.go) is the reference; its test
 * TestRingCLayout reads this file and compares every value, so the two cannot drift.
 *
 * A ring: one header page (byte offsets below), then the data area of records. A record starts on
 * a GOXIO_RING_ALIGN boundary with its 64-bit word (stored last: it publishes the record): bits
 * 0-23 payload length (a pad record: its length in GOXIO_RING_ALIGN units), 24-29 name length,
 * 30-31 kind, 32-63 uint32(position / GOXIO_RING_ALIGN); the name at GOXIO_RING_NAME_OFF, the
 * payload at GOXIO_RING_HDR.
 */
#ifndef GOXIO_RING_LAYOUT_H
#define GOXIO_RING_LAYOUT_H

#define GOXIO_RING_TAIL 128
#define GOXIO_RING_PUSHED 136
#define GOXIO_RING_DROPS 144
#define GOXIO_RING_WAKES 152
#define GOXIO_RING_BUSY 192
#define GOXIO_RING_HEAD 256
#define GOXIO_RING_DETACHED 320
#define GOXIO_RING_DATA_OFF 4096

#define GOXIO_RING_HDR 48
#define GOXIO_RING_NAME_OFF 8
#define GOXIO_RING_MAX_NAME 40
#define GOXIO_RING_ALIGN 64
#define GOXIO_RING_KIND_DATA 1
#define GOXIO_RING_KIND_PAD 2

/* the inbox's header page */
#define GOXIO_RING_IB_CLOSED 40
#define GOXIO_RING_IB_LIMIT 56
#define GOXIO_RING_IB_SPINNERS 128
#define GOXIO_RING_IB_WAKE 132
#define GOXIO_RING_SKB_OVERHEAD 512

#endif

/*
 * pairs_layout.h: the TCP pairing table's layout as the preload library reads and writes it
 * (pairs.c). The Go package offload/shm (pairs.go) is the reference; its test TestPairsCLayout
 * reads this file and compares every value, so the two cannot drift.
 *
 * The segment `<dir>/goxio.<euid>.<netns>.pairs2`: a header of GOXIO_PAIRS_HEADER_WORDS 64-bit
 * words, then GOXIO_PAIRS_SLOTS entries of GOXIO_PAIRS_WORDS words, open addressing with linear
 * probing over at most GOXIO_PAIRS_PROBE slots from a key's home. Entry words: 0 state (bits
 * 0-7) | generation (8-31) | owner pid (32-63); 1 owner start time; 2-3 connecting end's address
 * (16 bytes, IPv4 as v4-mapped); 4-5 accepting end's address; 6 connecting port (bits 0-15) |
 * accepting port (16-31), ports in host order; 7 not the entry's: how many registrations have
 * this slot as their home.
 */
#ifndef GOXIO_PAIRS_LAYOUT_H
#define GOXIO_PAIRS_LAYOUT_H

#define GOXIO_PAIRS_MAGIC 0x5352504f49584f47ULL /* "GOXIOPRS" read as a little-endian word */
#define GOXIO_PAIRS_VERSION 2
#define GOXIO_PAIRS_HEADER_WORDS 512
#define GOXIO_PAIRS_SLOTS 8192
#define GOXIO_PAIRS_WORDS 8
#define GOXIO_PAIRS_PROBE 64

/* entry states (word 0, bits 0-7) */
#define GOXIO_PAIRS_FREE 0  /* never used: a probe stops here */
#define GOXIO_PAIRS_BUSY 1  /* being written by its owner */
#define GOXIO_PAIRS_REG 2   /* registered: the connecting end is a goxio process */
#define GOXIO_PAIRS_READY 3 /* ... and it made the connection's segment */
#define GOXIO_PAIRS_GONE 4  /* removed: reusable, a probe goes on */

/* the key's home slot: h = GOXIO_PAIRS_SEED; for each key word: h ^= w, h *= GOXIO_PAIRS_MUL,
 * h ^= h >> 31; home = h % GOXIO_PAIRS_SLOTS */
#define GOXIO_PAIRS_SEED 0x9e3779b97f4a7c15ULL
#define GOXIO_PAIRS_MUL 0xbf58476d1ce4e5b9ULL

#endif

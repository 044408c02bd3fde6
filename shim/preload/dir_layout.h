/*
 * dir_layout.h: the discovery directory's layout as the preload library writes it
 * (lazy_listen.c). The Go package offload/discovery (layout.go) is the reference; the test
 * TestCLayout there reads this file and compares every value, so the two cannot drift.
 *
 * The segment `<dir>/goxio.<euid>.<netns>.dir`: a header of GOXIO_DIR_HEADER_WORDS 64-bit words
 * and GOXIO_DIR_ENTRIES entries of GOXIO_DIR_ENTRY_WORDS words each, little-endian, accessed with
 * atomic loads and stores only. Each entry has a seqlock (word 0: writer pid in the high 32 bits,
 * a sequence in the low 32, odd while written) and is written only by its owner (word 1: pid,
 * flags in the high 32 bits; word 2: the owner's start time, /proc/PID/stat field 22).
 */
#ifndef GOXIO_DIR_LAYOUT_H
#define GOXIO_DIR_LAYOUT_H

#define GOXIO_DIR_MAGIC 0x5249444f49584f47ULL /* "GOXIODIR" read as a little-endian word */
#define GOXIO_DIR_VERSION 1
#define GOXIO_DIR_HEADER_WORDS 512
#define GOXIO_DIR_ENTRY_WORDS 32
#define GOXIO_DIR_ENTRIES 4096

/* header words */
#define GOXIO_DIR_H_MAGIC 0
#define GOXIO_DIR_H_VERSION 1 /* version | entry words << 32 */
#define GOXIO_DIR_H_ENTRIES 2
#define GOXIO_DIR_H_HEADER_WORDS 3
#define GOXIO_DIR_H_GEN 8    /* bumped after every change of any entry */
#define GOXIO_DIR_H_CLAIM 16 /* a unique, increasing number per publication */
#define GOXIO_DIR_H_HIGH 24  /* one past the highest slot ever claimed */

/* entry words */
#define GOXIO_DIR_E_LOCK 0
#define GOXIO_DIR_E_OWNER 1 /* pid (low 32 bits, 0 = free) | flags (high 32 bits) */
#define GOXIO_DIR_E_START 2
#define GOXIO_DIR_E_CLAIM 3
#define GOXIO_DIR_E_META 4 /* family | inbox length << 8 | local port << 16 | peer port << 32 | kinds << 48 */
#define GOXIO_DIR_E_LOCAL 5
#define GOXIO_DIR_E_PEER 7
#define GOXIO_DIR_E_GROUP 9
#define GOXIO_DIR_E_SOURCE 11
#define GOXIO_DIR_E_INBOX 13
#define GOXIO_DIR_E_END 21 /* first reserved word (zero) */
#define GOXIO_DIR_MAX_INBOX 63

/* entry flags (high 32 bits of the owner word) */
#define GOXIO_DIR_F_V6ONLY 1
#define GOXIO_DIR_F_STREAM 32 /* a listening TCP socket */
#define GOXIO_DIR_F_LAZY 64   /* ... of a process whose engine is not loaded yet */

/* address kinds of the meta word (two bits per address: local, peer, group, source) */
#define GOXIO_DIR_KIND4 1
#define GOXIO_DIR_KIND6 2

/* attempts to take an entry's lock (a sweeper holds it for a few dozen stores) */
#define GOXIO_DIR_LOCK_TRIES 100000

/* The shared-memory transports' switches and their defaults (conf.Defaults: GOXIO_SHM,
 * GOXIO_SHM_TCP), and the segments' directory (GOXIO_SHM_DIR). */
#define GOXIO_DIR_SHM_DEFAULT 1
#define GOXIO_DIR_SHM_TCP_DEFAULT 1
#define GOXIO_DIR_DEFAULT_DIR "/dev/shm"

#endif

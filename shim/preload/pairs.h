/*
 * pairs.h: the TCP pairing table from C (pairs.c; layout in pairs_layout.h, reference
 * offload/shm/pairs.go). Plain functions over a mapping of the table: no state of their own, so
 * that tests/pairsc builds them against the Go implementation.
 */
#ifndef GOXIO_PAIRS_H
#define GOXIO_PAIRS_H

#include <stdint.h>
#include <sys/socket.h>

/* A connection's key: the connecting end's endpoint, then the accepting end's (pairs.go's
 * pairKey): two address words each (16 bytes, IPv4 as v4-mapped), then both ports. */
struct goxio_pair_key {
	uint64_t w[5];
};

/* What the accepting end learns (offload/shm's PairState). */
enum { GOXIO_PAIR_NONE = 0, GOXIO_PAIR_KNOWN = 1, GOXIO_PAIR_READY = 2 };

/* goxio_pair_key_of makes the key of the connection client -> server (sockaddr_in or
 * sockaddr_in6 each, any mix); 0 when either is of another family or too short. */
int goxio_pair_key_of(struct goxio_pair_key *k, const struct sockaddr *client, socklen_t clen,
		      const struct sockaddr *server, socklen_t slen);

/* goxio_pair_lookup is what the table says of key k (memory reads only). */
int goxio_pair_lookup(const volatile uint64_t *mem, const struct goxio_pair_key *k);

/* goxio_pair_register registers k for a process (pid, start time) in a free or removed slot of
 * its probe window, and returns the slot with *word set to the entry's word 0 as published; -1
 * when there is none, or the window holds an entry of the same key (left by a dead process, or
 * by this one: the engine takes such over, pairs.go's Register). */
int goxio_pair_register(volatile uint64_t *mem, const struct goxio_pair_key *k, uint32_t pid, uint64_t start,
			uint64_t *word);

/* goxio_pair_drop removes the registration slot/word (registered or ready); nothing when the
 * entry's word 0 is another (taken over since). */
void goxio_pair_drop(volatile uint64_t *mem, int slot, uint64_t word);

#endif

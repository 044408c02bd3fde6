/*
 * pairs.c: the TCP pairing table read and written from C (pairs.h), with the Go writer's
 * protocol (offload/shm/pairs.go): an entry is claimed with a compare-and-swap of word 0 to busy
 * with the next generation, its key written, then published registered; a reader trusts a key
 * read between two equal loads of word 0. Every access is an atomic load, store or CAS of one
 * aligned word; the table is another process's memory too, so nothing read is trusted beyond
 * the entry's own words and every index is reduced modulo the slot count.
 */
#include "pairs.h"

#include <netinet/in.h>
#include <string.h>

#include "pairs_layout.h"

static volatile uint64_t *pair_entry(volatile uint64_t *mem, unsigned slot) {
	return mem + GOXIO_PAIRS_HEADER_WORDS + (uint64_t)(slot % GOXIO_PAIRS_SLOTS) * GOXIO_PAIRS_WORDS;
}

/* endpoint writes sa's canonical address (16 bytes, IPv4 as v4-mapped, IPv6 scope dropped) and
 * port (host order); 0 for another family or a short length. */
static int endpoint(const struct sockaddr *sa, socklen_t len, uint8_t addr[16], uint16_t *port) {
	if (sa == NULL)
		return 0;
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		struct sockaddr_in sin;
		memcpy(&sin, sa, sizeof sin);
		memset(addr, 0, 10);
		addr[10] = addr[11] = 0xff;
		memcpy(addr + 12, &sin.sin_addr, 4);
		*port = ntohs(sin.sin_port);
		return 1;
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 s6;
		memcpy(&s6, sa, sizeof s6);
		memcpy(addr, &s6.sin6_addr, 16);
		*port = ntohs(s6.sin6_port);
		return 1;
	}
	return 0;
}

int goxio_pair_key_of(struct goxio_pair_key *k, const struct sockaddr *client, socklen_t clen,
		      const struct sockaddr *server, socklen_t slen) {
	uint8_t c[16], s[16];
	uint16_t cp, sp;
	if (!endpoint(client, clen, c, &cp) || !endpoint(server, slen, s, &sp))
		return 0;
	/* little-endian words, as the Go side reads the 16 bytes */
	memcpy(&k->w[0], c, 16);
	memcpy(&k->w[2], s, 16);
	k->w[4] = (uint64_t)cp | (uint64_t)sp << 16;
	return 1;
}

static unsigned pair_home(const struct goxio_pair_key *k) {
	uint64_t h = GOXIO_PAIRS_SEED;
	for (int i = 0; i < 5; i++) {
		h ^= k->w[i];
		h *= GOXIO_PAIRS_MUL;
		h ^= h >> 31;
	}
	return (unsigned)(h % GOXIO_PAIRS_SLOTS);
}

static unsigned pair_state(uint64_t w) { return (unsigned)(w & 0xff); }

/* home_count is word 7 of slot h: how many registrations have h as their home (pairs.go's
 * homeCount; raised before a claim, lowered after a removal, so 0 means none can be found). */
static volatile uint64_t *home_count(const volatile uint64_t *mem, unsigned h) {
	return pair_entry((volatile uint64_t *)mem, h) + 7;
}

/* key_is reports whether entry e holds k, read between two equal loads of word 0 (w). */
static int key_is(const volatile uint64_t *e, uint64_t w, const struct goxio_pair_key *k) {
	for (int j = 0; j < 5; j++)
		if (__atomic_load_n(&e[2 + j], __ATOMIC_ACQUIRE) != k->w[j])
			return 0;
	return __atomic_load_n(&e[0], __ATOMIC_ACQUIRE) == w;
}

int goxio_pair_lookup(const volatile uint64_t *mem, const struct goxio_pair_key *k) {
	unsigned h = pair_home(k);
	if (__atomic_load_n(home_count(mem, h), __ATOMIC_SEQ_CST) == 0)
		return GOXIO_PAIR_NONE; /* no registration homed here: no probe through tombstones */
	for (unsigned j = 0; j < GOXIO_PAIRS_PROBE; j++) {
		const volatile uint64_t *e = pair_entry((volatile uint64_t *)mem, h + j);
		uint64_t w = __atomic_load_n(&e[0], __ATOMIC_ACQUIRE);
		switch (pair_state(w)) {
		case GOXIO_PAIRS_FREE:
			return GOXIO_PAIR_NONE;
		case GOXIO_PAIRS_REG:
		case GOXIO_PAIRS_READY:
			if (key_is(e, w, k))
				return pair_state(w) == GOXIO_PAIRS_READY ? GOXIO_PAIR_READY : GOXIO_PAIR_KNOWN;
		}
	}
	return GOXIO_PAIR_NONE;
}

int goxio_pair_register(volatile uint64_t *mem, const struct goxio_pair_key *k, uint32_t pid, uint64_t start,
			uint64_t *word) {
	unsigned h = pair_home(k);
	int tries = 4;
again:
	if (tries-- == 0)
		return -1;
	int free = -1;
	uint64_t free_w = 0;
	/* no registration homed here: none of this key either, the first reusable slot will do */
	int none = __atomic_load_n(home_count(mem, h), __ATOMIC_SEQ_CST) == 0;
	for (unsigned j = 0; j < GOXIO_PAIRS_PROBE; j++) {
		unsigned slot = (h + j) % GOXIO_PAIRS_SLOTS;
		volatile uint64_t *e = pair_entry(mem, slot);
		uint64_t w = __atomic_load_n(&e[0], __ATOMIC_ACQUIRE);
		unsigned st = pair_state(w);
		if (st == GOXIO_PAIRS_FREE || st == GOXIO_PAIRS_GONE) {
			if (free < 0)
				free = (int)slot, free_w = w;
			if (st == GOXIO_PAIRS_FREE || none)
				break; /* nothing is registered beyond a never-used slot */
		} else if ((st == GOXIO_PAIRS_REG || st == GOXIO_PAIRS_READY) && key_is(e, w, k)) {
			return -1; /* an entry of the same connection: the engine's to take over */
		}
	}
	if (free < 0)
		return -1;
	volatile uint64_t *e = pair_entry(mem, (unsigned)free);
	uint64_t gen = ((free_w >> 8) + 1) & 0xffffff;
	uint64_t busy = (uint64_t)pid << 32 | gen << 8 | GOXIO_PAIRS_BUSY;
	__atomic_fetch_add(home_count(mem, h), 1, __ATOMIC_SEQ_CST);
	if (!__atomic_compare_exchange_n(&e[0], &free_w, busy, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
		__atomic_fetch_sub(home_count(mem, h), 1, __ATOMIC_SEQ_CST);
		goto again; /* another writer took it: probe again */
	}
	/* Release stores: the claim above ordered them after busy, and a reader trusts them only
	 * between two equal acquire loads of word 0, so the publication below orders them before
	 * registered (a sequentially consistent store is an exchange on x86, ~20 cycles each). */
	__atomic_store_n(&e[1], start, __ATOMIC_RELEASE);
	for (int j = 0; j < 5; j++)
		__atomic_store_n(&e[2 + j], k->w[j], __ATOMIC_RELEASE);
	uint64_t reg = (busy & ~0xffull) | GOXIO_PAIRS_REG;
	__atomic_store_n(&e[0], reg, __ATOMIC_RELEASE);
	*word = reg;
	return free;
}

void goxio_pair_drop(volatile uint64_t *mem, int slot, uint64_t word) {
	if (slot < 0)
		return;
	volatile uint64_t *e = pair_entry(mem, (unsigned)slot);
	/* the key is ours until the removal: its home is read before, another may claim the slot after */
	struct goxio_pair_key k;
	for (int j = 0; j < 5; j++)
		k.w[j] = __atomic_load_n(&e[2 + j], __ATOMIC_SEQ_CST);
	uint64_t gone = (word & ~0xffull) | GOXIO_PAIRS_GONE, w = word;
	int done = __atomic_compare_exchange_n(&e[0], &w, gone, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	if (!done) {
		w = (word & ~0xffull) | GOXIO_PAIRS_READY;
		done = __atomic_compare_exchange_n(&e[0], &w, gone, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	}
	if (done)
		__atomic_fetch_sub(home_count(mem, pair_home(&k)), 1, __ATOMIC_SEQ_CST);
}

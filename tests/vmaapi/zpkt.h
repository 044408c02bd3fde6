/* zpkt.h: what the zero-copy test programs (zring.c, zxdp.c) share: the datagrams' contents, where
 * a held datagram lies in this process, and one receive that holds a datagram with
 * recvfrom_zcopy when the library offers it (zc) or copies it with recvfrom. Include after
 * check.h; the program sets api and zc. */
#ifndef VMAAPI_ZPKT_H
#define VMAAPI_ZPKT_H

#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "../../shim/goxio_extra.h"

static struct vma_api_t *api;
static int zc;

/* ---- contents: a sequence number, then a pattern of it ---- */

static unsigned char pattern(size_t i, uint32_t seed) { return (unsigned char)(i * 131 + seed * 7 + (i >> 8)); }

static void fill(unsigned char *b, size_t n, uint32_t seq) {
	memcpy(b, &seq, sizeof seq);
	for (size_t i = sizeof seq; i < n; i++)
		b[i] = pattern(i, seq);
}

static int intact(const unsigned char *b, size_t n, uint32_t seq) {
	uint32_t s;
	memcpy(&s, b, sizeof s);
	if (s != seq)
		return 0;
	for (size_t i = sizeof seq; i < n; i++)
		if (b[i] != pattern(i, seq))
			return 0;
	return 1;
}

/* ---- where a held datagram lies ---- */

/* mapping finds the mapping of this process holding p: its name (file path, or empty when
 * anonymous), its range and the file offset of p; 0 when no mapping holds it. */
static int mapping(const void *p, char *name, size_t namesz, unsigned long *lo, unsigned long *hi, off_t *off) {
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL, "open maps");
	char line[4096];
	int found = 0;
	while (!found && fgets(line, sizeof line, f) != NULL) {
		unsigned long foff;
		int n = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", lo, hi, &foff, &n) < 3)
			continue;
		if ((uintptr_t)p < *lo || (uintptr_t)p >= *hi)
			continue;
		found = 1;
		char *nm = line + n;
		nm[strcspn(nm, "\n")] = 0;
		snprintf(name, namesz, "%s", n > 0 ? nm : "");
		*off = (off_t)((uintptr_t)p - *lo + foff);
	}
	fclose(f);
	return found;
}

/* aliases proves that the n bytes at p are the bytes at off of the file at path (a ring's file,
 * or a mapping's /proc/self/map_files entry), not a copy: a byte written through the file shows
 * at p, and is put back. */
static void aliases(const unsigned char *p, size_t n, const char *path, off_t off) {
	int fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0, "open the mapped file %s", path);
	unsigned char b = 0;
	size_t at = n / 2;
	CHECK(pread(fd, &b, 1, off + (off_t)at) == 1 && b == p[at], "the file's byte differs from the iovec's");
	unsigned char x = (unsigned char)~b;
	CHECK(pwrite(fd, &x, 1, off + (off_t)at) == 1, "write the mapped file");
	CHECK(*(volatile const unsigned char *)(p + at) == x, "a byte written through the mapped file does not show through the iovec");
	CHECK(pwrite(fd, &b, 1, off + (off_t)at) == 1, "restore the mapped file");
	close(fd);
}

/* ---- receiving ---- */

struct rec {
	void *id;
	const unsigned char *data;
	size_t len;
	unsigned char *copy; /* the fallback path's buffer */
};

/* receive takes one datagram from s into r: held with recvfrom_zcopy when offered, else copied.
 * Returns its length, or -1 with errno. */
static ssize_t receive(int s, struct rec *r, int flags, struct sockaddr_in *from) {
	socklen_t fl = sizeof *from;
	if (zc) {
		unsigned char pbuf[128];
		int f = flags;
		ssize_t n = api->recvfrom_zcopy(s, pbuf, sizeof pbuf, &f, (struct sockaddr *)from, &fl);
		if (n < 0)
			return n;
		CHECK(f & MSG_VMA_ZCOPY, "no MSG_VMA_ZCOPY");
		struct vma_packets_t *pk = (struct vma_packets_t *)pbuf;
		CHECK(pk->n_packet_num == 1 && pk->pkts[0].sz_iov == 1 && pk->pkts[0].iov[0].iov_len == (size_t)n, "packets");
		r->id = pk->pkts[0].packet_id;
		r->data = pk->pkts[0].iov[0].iov_base;
		r->len = (size_t)n;
		return n;
	}
	if (r->copy == NULL)
		r->copy = malloc(9001);
	ssize_t n = recvfrom(s, r->copy, 9001, flags, (struct sockaddr *)from, &fl);
	if (n >= 0) {
		r->data = r->copy;
		r->len = (size_t)n;
	}
	return n;
}

static int free_one(int s, void *id) {
	struct vma_packet_t pk = {.packet_id = id};
	return api->free_packets(s, &pk, 1);
}

#endif

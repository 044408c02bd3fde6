/*
 * spill_epoll.c: epoll waits that see datagrams spilled at a fork (spill.c).
 *
 * A shared-memory socket that a fork sent back to the kernel is handed back into the program's
 * epoll sets with the program's events and data (offload/iomux: handMembersOver), but the datagrams
 * its rings held sit in a spill region, not in the kernel socket: the kernel's epoll does not see
 * them. So, while some spill region still holds a datagram, an epoll wait looks at the set's
 * members (the kernel lists them, with their events and data, in /proc/self/fdinfo/EPFD: it also
 * knows what the program changed with epoll_ctl since, in the child too) and reports a member that
 * asks for input and holds spilled datagrams as readable, after a look at the set that does not
 * wait, as the kernel would have reported the datagrams in its queue:
 *   - level-triggered: at every wait until they are received;
 *   - EPOLLET: once per spill region and set (nothing new ever arrives in a spill region);
 *   - EPOLLONESHOT: once, then the member is disarmed as the kernel disarms it (events cleared
 *     but for the flags, through EPOLL_CTL_MOD), until the program re-arms it.
 * No spill region with a datagram left: one load per wait (goxio_spill_pending), nothing else.
 */
#include "preload.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Members of a set that hold spilled datagrams, looked at per wait. */
#define SPILL_MEMBERS 64

struct spill_member {
	int fd;
	uint32_t events;
	uint64_t data;
};

/* Edge-triggered members already reported for a spill region: (set, fd, region). */
#define ET_SEEN 64
static struct {
	int epfd, fd;
	const void *region;
} et_seen[ET_SEEN] GOXIO_COLD;
static int et_lock;

static int et_reported(int epfd, int fd, const void *region, int mark) {
	while (__atomic_exchange_n(&et_lock, 1, __ATOMIC_ACQUIRE))
		;
	int found = 0, free_slot = -1;
	for (int i = 0; i < ET_SEEN; i++) {
		if (et_seen[i].region == region && et_seen[i].epfd == epfd && et_seen[i].fd == fd) {
			found = 1;
			break;
		}
		if (free_slot < 0 && (et_seen[i].region == NULL || goxio_spill_region(et_seen[i].fd) != et_seen[i].region))
			free_slot = i;
	}
	if (!found && mark && free_slot >= 0) {
		et_seen[free_slot].epfd = epfd;
		et_seen[free_slot].fd = fd;
		et_seen[free_slot].region = region;
	}
	__atomic_store_n(&et_lock, 0, __ATOMIC_RELEASE);
	return found;
}

/* parse_line reads one "tfd: N events: X data: Y ..." line of an epoll fd's fdinfo. */
static int parse_line(const char *line, struct spill_member *m) {
	const char *p = strstr(line, "tfd:");
	if (p == NULL)
		return 0;
	char *end;
	long fd = strtol(p + 4, &end, 10);
	const char *e = strstr(end, "events:");
	const char *d = e != NULL ? strstr(e, "data:") : NULL;
	if (end == p + 4 || e == NULL || d == NULL || fd < 0 || fd >= GOXIO_FDT_SIZE)
		return 0;
	m->fd = (int)fd;
	m->events = (uint32_t)strtoul(e + 7, NULL, 16);
	m->data = (uint64_t)strtoull(d + 5, NULL, 16);
	return 1;
}

/* spill_members lists the members of epfd that ask for input and hold spilled datagrams. */
static int spill_members(int epfd, struct spill_member *out, int max) {
	char path[48];
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epfd);
	int f = REAL(openat)(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return 0;
	char buf[4096];
	size_t have = 0;
	int k = 0;
	for (;;) {
		ssize_t r = REAL(read)(f, buf + have, sizeof buf - 1 - have);
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = 0;
			struct spill_member m;
			if (k < max && parse_line(line, &m) && (m.events & (EPOLLIN | EPOLLRDNORM)) && goxio_spill_ready(m.fd))
				out[k++] = m;
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf - 1)
			have = 0; /* a line longer than the buffer: not one of the member lines */
	}
	REAL(close)(f);
	return k;
}

int goxio_spill_epoll(int epfd, struct epoll_event *ev, int n, int (*wait0)(int, struct epoll_event *, int, const sigset_t *),
		      const sigset_t *mask) {
	if (GOXIO_LIKELY(!goxio_spill_pending()) || ev == NULL || n <= 0)
		return GOXIO_SPILL_NONE;
	struct spill_member m[SPILL_MEMBERS];
	int k = spill_members(epfd, m, SPILL_MEMBERS), report = 0;
	for (int i = 0; i < k; i++) {
		if (m[i].events & EPOLLET) {
			const void *region = goxio_spill_region(m[i].fd);
			if (et_reported(epfd, m[i].fd, region, 0))
				continue;
		}
		m[report++] = m[i];
	}
	if (report == 0)
		return GOXIO_SPILL_NONE;
	int r = wait0(epfd, ev, n, mask);
	if (r < 0)
		return r;
	for (int i = 0; i < report; i++) {
		uint32_t in = m[i].events & (EPOLLIN | EPOLLRDNORM);
		int j = 0;
		while (j < r && ev[j].data.u64 != m[i].data)
			j++;
		if (j < r)
			ev[j].events |= in; /* the kernel reported the member for something else */
		else if (r < n) {
			ev[r].events = in;
			ev[r].data.u64 = m[i].data;
			r++;
		} else
			break; /* no room: the next wait reports it */
		if (m[i].events & EPOLLET)
			et_reported(epfd, m[i].fd, goxio_spill_region(m[i].fd), 1);
		if (m[i].events & EPOLLONESHOT) {
			struct epoll_event off = {m[i].events & (EPOLLONESHOT | EPOLLET | EPOLLWAKEUP), {.u64 = m[i].data}};
			REAL(epoll_ctl)(epfd, EPOLL_CTL_MOD, m[i].fd, &off);
		}
	}
	return r;
}

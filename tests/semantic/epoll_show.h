/* epoll_show.h: epoll_wait with a transcript line, shared by the epoll programs. */
#ifndef GOXIO_SEMANTIC_EPOLL_SHOW_H
#define GOXIO_SEMANTIC_EPOLL_SHOW_H

#include "common.h"
#include <sys/epoll.h>

/* epoll_wait_show waits on ep for up to ms and prints "label: N event(s) [data events]...". The
 * order of ready events is not part of epoll's contract: they are printed sorted by data. */
static void epoll_wait_show(const char *label, int ep, int ms)
{
	struct epoll_event evs[8];
	int n = epoll_wait(ep, evs, 8, ms);
	if (n < 0) {
		out("%s: epoll_wait = -1 %s\n", label, ename(errno));
		return;
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && evs[j - 1].data.u64 > evs[j].data.u64; j--) {
			struct epoll_event t = evs[j];
			evs[j] = evs[j - 1];
			evs[j - 1] = t;
		}
	out("%s: %d event(s)", label, n);
	for (int i = 0; i < n; i++)
		out(" [%llu %s]", (unsigned long long)evs[i].data.u64, pollbits((int)evs[i].events));
	out("\n");
}

#endif

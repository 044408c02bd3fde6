/* The fds a program sees in /proc/self/fd: at start-up, after opening sockets, after closefrom(3).
 * With the library loaded the set must be the same as without it (fd numbers are the point here):
 * the library must not leave fds of its own where the program can see or hit them. The library's
 * own fds (at least the Go runtime's epoll fd and eventfd) sit near the fd limit and are closed to
 * the program: readdir shows them, but fcntl, close, dup2 and close_range answer as for a closed
 * fd. So the listing is of the fds fcntl(F_GETFD) finds open, as a careful close loop checks; a
 * listed fd that is not open must not be below 1024, where a program's own fds are. */
#include "common.h"
#include <dirent.h>
#include <fcntl.h>

static void list(const char *label)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		die("opendir");
	int self = dirfd(d);
	char line[4096];
	int n = 0;
	line[0] = 0;
	int fds[1024], k = 0, hidden_low = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd == self || k >= 1024)
			continue;
		if (fcntl(fd, F_GETFD) < 0) {
			if (errno != EBADF || fd < 1024)
				hidden_low++;
			continue;
		}
		fds[k++] = fd;
	}
	closedir(d);
	E("listed but not open, below 1024", hidden_low, 0, 0);
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
			int t = fds[j];
			fds[j] = fds[j - 1];
			fds[j - 1] = t;
		}
	for (int i = 0; i < k; i++)
		n += snprintf(line + n, sizeof line - (size_t)n, " %d", fds[i]);
	out("%s:%s\n", label, line);
}

static void kinds(void)
{
	/* What the first fds above stderr are, by link target type. */
	for (int fd = 3; fd < 8; fd++) {
		char p[64], t[256];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		ssize_t l = readlink(p, t, sizeof t - 1);
		if (l < 0) {
			out("fd %d: closed\n", fd);
			continue;
		}
		t[l] = 0;
		char *colon = strchr(t, ':');
		if (colon && t[0] != '/')
			*colon = 0;
		out("fd %d: %s\n", fd, t[0] == '/' ? "file" : t);
	}
}

int main(void)
{
	list("start-up");
	kinds();
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	int t = socket(AF_INET, SOCK_STREAM, 0);
	out("first socket fd = %d, second = %d\n", u, t);
	list("two sockets");
	kinds();
	int c, s;
	tcp_pair(&c, &s);
	list("a connected pair too");
	close(c);
	close(s);
	close(u);
	close(t);
	list("closed again");
	closefrom(3);
	list("closefrom(3)");
	int again = socket(AF_INET, SOCK_DGRAM, 0);
	out("next socket fd = %d\n", again);
	return finish();
}

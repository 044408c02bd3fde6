/* A program's fds belong to its own threads only: no other thread of the process (the library's
 * runtime threads) holds a reference to them, so a daemon that closes its stdout and stderr makes
 * the reader of its pipe see EOF at once, as without the library. */
#include "common.h"
#include <dirent.h>
#include <sys/stat.h>

/* others_holding counts the fd entries of threads other than the caller that name the pipe. */
static int others_holding(ino_t pipe_ino)
{
	char want[64], path[300], link[128];
	snprintf(want, sizeof want, "pipe:[%lu]", (unsigned long)pipe_ino);
	DIR *tasks = opendir("/proc/self/task");
	if (tasks == NULL)
		die("opendir /proc/self/task");
	int n = 0;
	struct dirent *t;
	while ((t = readdir(tasks)) != NULL) {
		if (t->d_name[0] == '.' || atoi(t->d_name) == gettid())
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/fd", t->d_name);
		DIR *fds = opendir(path);
		if (fds == NULL)
			continue; /* the thread exited */
		struct dirent *f;
		while ((f = readdir(fds)) != NULL) {
			if (f->d_name[0] == '.')
				continue;
			char fp[600];
			snprintf(fp, sizeof fp, "%s/%s", path, f->d_name);
			ssize_t len = readlink(fp, link, sizeof link - 1);
			if (len > 0) {
				link[len] = 0;
				n += strcmp(link, want) == 0;
			}
		}
		closedir(fds);
	}
	closedir(tasks);
	return n;
}

int main(void)
{
	int p[2];
	if (pipe(p) < 0)
		die("pipe");
	struct stat st;
	if (fstat(p[1], &st) < 0)
		die("fstat");
	out("threads outside the program holding the pipe: %d\n", others_holding(st.st_ino));

	pid_t reader = fork();
	if (reader < 0)
		die("fork");
	if (reader == 0) {
		/* The reader: EOF within 5 s, or it reports a timeout through its exit code. */
		close(p[1]);
		char buf[64];
		for (;;) {
			struct pollfd pfd = {.fd = p[0], .events = POLLIN};
			if (poll(&pfd, 1, 5000) <= 0)
				_exit(2);
			ssize_t r = read(p[0], buf, sizeof buf);
			if (r == 0)
				_exit(0);
			if (r < 0)
				_exit(3);
		}
	}
	close(p[0]);

	/* The daemon: stdout and stderr become the pipe, a line is written, both are closed. */
	int saved = fcntl(1, F_DUPFD_CLOEXEC, 10);
	if (saved < 0)
		die("save stdout");
	if (dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
		die("dup2");
	close(p[1]);
	if (write(2, "daemon started\n", 15) != 15)
		die("write stderr");
	close(1);
	close(2);

	int status = 0;
	if (waitpid(reader, &status, 0) < 0)
		die("waitpid");
	int eof = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (dup2(saved, 1) < 0)
		die("restore stdout");
	CHECK("the reader saw EOF after stdout and stderr were closed", eof);
	return g_fail;
}

/* The library keeps no reference of its own to a program's fds (no dup of stderr, no private fd
 * table holding them), so a daemon that closes its stdout and stderr makes the reader of its pipe
 * see EOF at once, as without the library. */
#include "common.h"

int main(void)
{
	int p[2];
	if (pipe(p) < 0)
		die("pipe");

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

/* The program's fd limit stays its own. The library's Go runtime raises the soft RLIMIT_NOFILE of
 * the process it starts in to the hard limit - 1 (Go's syscall package does at initialisation);
 * the engine must put the program's back: a program that keeps its soft limit low so that its
 * descriptors stay below FD_SETSIZE for select() would otherwise get ones above it, and its
 * children would inherit the raised limit. The program lowers its soft limit (the hard one stays),
 * loads the engine with UDP traffic, then reads its limit and has a shell child print its own. */
#include "common.h"
#include <sys/resource.h>

int main(void)
{
	struct rlimit rl;
	OK("getrlimit", getrlimit(RLIMIT_NOFILE, &rl));
	rlim_t low = 512;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < low + 2)
		low = rl.rlim_max; /* nothing to raise: the check below holds trivially */
	struct rlimit want = { low, rl.rlim_max };
	OK("setrlimit soft 512", setrlimit(RLIMIT_NOFILE, &want));

	int r = udp_bound(0), s = udp_bound(0);
	char buf[8];
	E("sendto", udp_send_to(s, "abc", 3, port_of(r)), 3, 0);
	wait_readable(r, 2000);
	E("recv", recv(r, buf, sizeof buf, 0), 3, 0);

	struct rlimit now;
	OK("getrlimit after traffic", getrlimit(RLIMIT_NOFILE, &now));
	CHECK("soft limit kept", now.rlim_cur == low);
	CHECK("hard limit kept", now.rlim_max == rl.rlim_max);
	FILE *p = popen("ulimit -Sn", "r");
	if (p == NULL)
		die("popen");
	char line[64] = "";
	if (fgets(line, sizeof line, p) == NULL)
		die("reading the child's limit");
	pclose(p);
	CHECK("a child has the same soft limit", strtoul(line, NULL, 10) == low);
	close(r);
	close(s);
	return finish();
}

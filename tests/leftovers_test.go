package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// Nothing left behind (issue 16): a process that ends without running the library's exit path
// (_exit, as dash's `sh -c` and every popen child do, or SIGKILL) leaves its statistics segment
// and its shared-memory inbox; the next process that starts the engine removes them, and leaves
// those of live processes alone. So does a process that only listened, whose listeners the
// preload library published in the discovery directory without an engine.

// leftoverC binds a UDP socket (its inbox is made at bind: a port that a send gives opens it
// only at a later call), sends one datagram on it and receives (the receive loads the engine,
// which publishes its statistics), says "ready", then ends as argv[1] says: "_exit" with _exit(0), "exit" by
// returning from main, "wait" by waiting for stdin to close, "pause" at a signal.
const leftoverC = `
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 2) return 2;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in b = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(9), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (s < 0 || bind(s, (struct sockaddr *)&b, sizeof b) != 0) { perror("bind"); return 2; }
	if (sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof a) != 1) { perror("sendto"); return 2; }
	char c; /* the receive loads the engine (the send alone, to a port without a goxio socket, would not) */
	if (recv(s, &c, 1, MSG_DONTWAIT) == 1) return 2;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (strcmp(argv[1], "_exit") == 0) _exit(0);
	if (strcmp(argv[1], "wait") == 0) { char c; while (read(0, &c, 1) > 0) {} }
	if (strcmp(argv[1], "pause") == 0) for (;;) pause();
	return 0;
}
`

// leftoverSetup compiles leftoverC in a temporary folder, which it returns with the program and
// an empty shared-memory folder in it.
func leftoverSetup(t *testing.T) (tmp, prog, shmDir string) {
	t.Helper()
	tmp = t.TempDir()
	src := filepath.Join(tmp, "leftover.c")
	writeFile(t, src, []byte(leftoverC), 0o644)
	prog = filepath.Join(tmp, "leftover")
	testutil.CompileC(t, src, prog)
	shmDir = filepath.Join(tmp, "shm")
	if err := os.Mkdir(shmDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return tmp, prog, shmDir
}

func TestNothingLeftBehind(t *testing.T) {
	lib := integrationLib(t)
	tmp, prog, shmDir := leftoverSetup(t)
	dir := filepath.Join(tmp, "stats")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := testutil.Env(lib, "VMA_STATS_SHMEM_DIR="+dir, "GOXIO_SHM=1", "GOXIO_SHM_DIR="+shmDir)
	segment := func(pid int) string { return filepath.Join(dir, "goxiostat."+strconv.Itoa(pid)) }
	inbox := func(pid int) string {
		m, _ := filepath.Glob(filepath.Join(shmDir, "goxio."+strconv.Itoa(os.Geteuid())+".in."+strconv.Itoa(pid)+".*"))
		return strings.Join(m, " ")
	}
	exists := func(pid int) bool { _, err := os.Stat(segment(pid)); return err == nil }
	pidOf := func(out string) int {
		t.Helper()
		f := strings.Fields(strings.TrimSpace(out))
		if len(f) != 2 || f[0] != "ready" {
			t.Fatalf("program said %q", out)
		}
		pid, _ := strconv.Atoi(f[1])
		return pid
	}

	// A live process: its segment must survive every sweep.
	live := exec.Command(prog, "wait")
	live.Env = env
	stdin, err := live.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := live.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); live.Wait() }()
	var buf [64]byte
	n, _ := out.Read(buf[:])
	livePid := pidOf(string(buf[:n]))

	// Every start of the engine sweeps, so the two leftovers are made with no start between
	// their ends: the process to be killed starts first, then the one that ends with _exit.
	killed := testutil.Start(t, "killed", env, prog, "pause")
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(killed.Stdout(), "ready") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	killedPid := pidOf(killed.Stdout())
	res := runClient(t, env, 30*time.Second, prog, "_exit")
	if res.ExitCode != 0 {
		t.Fatalf("_exit run: %s\n%s", res, res.Stderr)
	}
	exitPid := pidOf(string(res.Stdout))

	// A process that only listened (no engine: its listeners were published from C) and is
	// killed: its directory entries stay until the next start too.
	listenBin := filepath.Join(tmp, "listeners")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "lazy", "listeners.c"), listenBin, "-O2")
	listener := startLazyListeners(t, listenBin, append(env, "GOXIO_SHM_TCP=1"))
	if hasEngine(listener.pid) {
		t.Fatal("the listening process loaded the engine")
	}

	// Killed: its segment stays too.
	for _, pid := range []int{killedPid, listener.pid} {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	killed.Wait(10 * time.Second)
	listener.cmd.Wait()
	if n := len(listenersOf(t, shmDir, listener.pid)); n != 5 {
		t.Fatalf("the killed listening process has %d directory entries before the next start, want its 5: the test shows nothing", n)
	}

	for name, pid := range map[string]int{"_exit": exitPid, "SIGKILL": killedPid, "live": livePid} {
		if !exists(pid) || inbox(pid) == "" {
			t.Fatalf("%s: no segment %s or no inbox before the next start: the test shows nothing", name, segment(pid))
		}
	}

	// The next start removes what the dead left, and nothing of the living, even in a process
	// that does not use the shared-memory transport.
	res = runClient(t, append(env, "GOXIO_SHM=0"), 30*time.Second, prog, "exit")
	if res.ExitCode != 0 {
		t.Fatalf("next run: %s\n%s", res, res.Stderr)
	}
	nextPid := pidOf(string(res.Stdout))
	for name, pid := range map[string]int{"_exit": exitPid, "SIGKILL": killedPid, "clean exit": nextPid} {
		if exists(pid) {
			t.Errorf("%s: segment %s left after the next start", name, segment(pid))
		}
		if in := inbox(pid); in != "" {
			t.Errorf("%s: inbox %s left after the next start", name, in)
		}
	}
	if got := listenersOf(t, shmDir, listener.pid); len(got) != 0 {
		t.Errorf("the killed listening process's directory entries are left after the next start: %+v", got)
	}
	if !exists(livePid) || inbox(livePid) == "" {
		t.Errorf("the live process's segment %s or its inbox was removed", segment(livePid))
	}
}

// TestNamespaceFilesSwept: a network namespace that goes away (a container, `unshare -n`) leaves
// its discovery directory (and its pairing table once TCP was used) in the shared-memory folder;
// the next engine that starts on the host removes them, and keeps its own namespace's.
func TestNamespaceFilesSwept(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a network namespace (unshare -n) needs root; offload/discovery's TestSweepNamespaces checks the sweep itself")
	}
	lib := integrationLib(t)
	_, prog, shmDir := leftoverSetup(t)
	env := testutil.Env(lib, "GOXIO_SHM=1", "GOXIO_SHM_TCP=1", "GOXIO_SHM_DIR="+shmDir)
	var own syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &own); err != nil {
		t.Fatal(err)
	}
	ownPrefix := "goxio." + strconv.Itoa(os.Geteuid()) + "." + strconv.FormatUint(own.Ino, 10) + "."
	others := func() (names []string) {
		ents, err := os.ReadDir(shmDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			n := e.Name()
			if (strings.HasSuffix(n, ".dir") || strings.HasSuffix(n, ".pairs2")) && !strings.HasPrefix(n, ownPrefix) {
				names = append(names, n)
			}
		}
		return names
	}

	// A process in a namespace of its own, which ends with it.
	res := runClient(t, env, 30*time.Second, "unshare", "-n", "sh", "-c", "ip link set lo up && exec "+prog+" exit")
	if res.ExitCode != 0 {
		t.Fatalf("the process in its own namespace: %s\n%s", res, res.Stderr)
	}
	if left := others(); len(left) == 0 {
		t.Fatalf("no file of the gone namespace before the next start (want at least its directory): the test shows nothing")
	}
	// The next engine in this namespace removes them.
	res = runClient(t, env, 30*time.Second, prog, "exit")
	if res.ExitCode != 0 {
		t.Fatalf("the process in this namespace: %s\n%s", res, res.Stderr)
	}
	if left := others(); len(left) != 0 {
		t.Errorf("files of the gone namespace after the next start: %v", left)
	}
	if _, err := os.Stat(filepath.Join(shmDir, ownPrefix+"dir")); err != nil {
		t.Errorf("this namespace's directory: %v", err)
	}
}

package tests

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestRuntimeFDs runs tests/semantic/runtimefds.c (thousands of sockets with traffic while the
// library's Go runtime collects garbage with GOGC=1, then close_range(3, ~0U, 0) twice, raw and
// through libc, and traffic again) under the library and checks what the semantic suite cannot:
// that the runtime really collected garbage many times, and that every descriptor the library
// holds at the end (the runtime's netpoller, and in the shared-memory modes its doorbells) sits
// in the internal range, at or above the bottom the engine uses (offload/netpoller.go), none
// between the program's numbers.
func TestRuntimeFDs(t *testing.T) {
	lib := integrationLib(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "runtimefds")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "semantic", "runtimefds.c"), bin,
		"-O1", "-D_GNU_SOURCE", "-Wall", "-Wno-unused-function")
	// The program needs thousands of descriptors: its soft limit is the hard one (set with
	// syscall.Setrlimit, so that os/exec does not give children the limit this process started
	// with). The library keeps the program's limit (shim/nofile.go); its internal range starts 64
	// below it, at most at 4032 (offload.netpollerMaxBase).
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
	bottom := int(min(rl.Max-64, 1<<12-64))
	gcLine := regexp.MustCompile(`(?m)^gc \d+ @`)
	for _, c := range []struct{ name, env string }{
		{"plain", ""}, {"shm", "GOXIO_SHM=1"}, {"shm-tcp", "GOXIO_SHM=1 GOXIO_SHM_TCP=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := testutil.Env(lib, append(strings.Fields(c.env), "GODEBUG=gctrace=1")...)
			res := runClient(t, env, 60*time.Second, bin, "list-all")
			gcs := len(gcLine.FindAll(res.Stderr, -1))
			if gcs < 5 {
				t.Fatalf("the library's runtime collected garbage %d times, want at least 5:\n%s", gcs,
					testutil.Tail(string(res.Stderr), 2000))
			}
			var all string
			for _, line := range strings.Split(string(res.Stdout), "\n") {
				if rest, ok := strings.CutPrefix(line, "every fd:"); ok {
					all = rest
				}
			}
			fields := strings.Fields(all)
			if len(fields) < 5 {
				t.Fatalf("want fds 0-2 and at least the runtime's two in %q:\n%s", all, res.Stdout)
			}
			for _, f := range fields {
				fd, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("bad fd %q in %q", f, all)
				}
				if fd > 2 && fd < bottom {
					t.Fatalf("fd %d of the library is below the internal range (from %d): %s", fd, bottom, all)
				}
			}
			t.Logf("%d collections; fds at the end:%s", gcs, all)
		})
	}
}

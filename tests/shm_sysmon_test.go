package tests

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestShmSysmonThreads: under the shared-memory transport the Go runtime's monitor thread runs
// SCHED_IDLE (its wake-ups made the p99.9 of ping-pong), but only while at most half the
// runtime's Ps' worth of program threads have called into the library; past that a thread
// calling in could wait seconds for an idle-class monitor on a saturated machine (shim/threads.go).
// tests/shm/shmthreads.c sends a checked datagram from each of N threads and counts its
// SCHED_IDLE threads.
func TestShmSysmonThreads(t *testing.T) {
	h := newShmHarness(t)
	prog := filepath.Join(t.TempDir(), "shmthreads")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "shm", "shmthreads.c"), prog, "-O2", "-Wall")
	for _, c := range []struct {
		name    string
		threads int
		env     []string
		idle    int
	}{
		{"one thread", 1, nil, 1},
		{"two threads", 2, nil, 1},
		{"GOXIO_SHM_SYSMON=normal", 1, []string{"GOXIO_SHM_SYSMON=normal"}, 0},
		{"16 threads (half of 32 Ps)", 16, []string{"GOMAXPROCS=32"}, 1},
		{"17 threads (more than half of 32 Ps)", 17, []string{"GOMAXPROCS=32"}, 0},
		{"40 threads, GOMAXPROCS=80", 40, []string{"GOMAXPROCS=80"}, 1},
		{"no shared-memory transport", 1, []string{"GOXIO_SHM=0"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := h.env(append([]string{"VMA_TRACELEVEL=DEBUG"}, c.env...)...)
			res := runClient(t, env, 60*time.Second, prog, fmt.Sprint(c.threads))
			if res.ExitCode != 0 {
				t.Fatalf("shmthreads %d: %s\n%s%s", c.threads, res, res.Stdout, res.Stderr)
			}
			want := fmt.Sprintf("threads=%d idle=%d", c.threads, c.idle)
			if got := strings.TrimSpace(string(res.Stdout)); got != want {
				t.Fatalf("shmthreads printed %q, want %q; library log:\n%s", got, want, res.Stderr)
			}
			// Without GOMAXPROCS in the environment the runtime gets its Ps when the second
			// thread calls in, and only then (shim/procs.go).
			raise := fmt.Sprintf(`a second thread calls into goxio {"GOMAXPROCS": %d, "was": %d}`,
				max(runtime.NumCPU(), 32), runtime.NumCPU())
			wantRaise := c.threads >= 2 && len(c.env) == 0 && runtime.NumCPU() < 32
			if got := strings.Contains(string(res.Stderr), raise); got != wantRaise {
				t.Fatalf("library log has %q: %v, want %v; log:\n%s", raise, got, wantRaise, res.Stderr)
			}
		})
	}
}

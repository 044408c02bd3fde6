package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestShmSysmonThreads: with GOXIO_SHM_SYSMON=idle (or VMA_SPEC=latency) the Go runtime's
// monitor thread runs SCHED_IDLE (its wake-ups made the p99.9 of ping-pong), but only while at
// most half the runtime's Ps' worth of program threads have called into the library; past that a
// thread calling in could wait seconds for an idle-class monitor on a saturated machine
// (shim/threads.go). Without the parameter it keeps its priority. tests/shm/shmthreads.c sends a
// checked datagram from each of N threads and lists its SCHED_IDLE threads; the monitor's thread
// id comes from the library's log. (Runtime threads the monitor itself started may be listed too:
// they inherit its policy.)
func TestShmSysmonThreads(t *testing.T) {
	h := newShmHarness(t)
	prog := filepath.Join(t.TempDir(), "shmthreads")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "shm", "shmthreads.c"), prog, "-O2", "-Wall")
	quietLine := regexp.MustCompile(`monitor thread runs SCHED_IDLE \{"tid": (\d+)\}`)
	idle := []string{"GOXIO_SHM_SYSMON=idle"}
	for _, c := range []struct {
		name    string
		threads int
		env     []string
		quiet   bool // the monitor is SCHED_IDLE at the end
		loud    bool // the library logs that it gave the priority back
	}{
		{"default", 1, nil, false, false},
		{"one thread", 1, idle, true, false},
		{"two threads", 2, idle, true, false},
		{"VMA_SPEC=latency", 2, []string{"VMA_SPEC=latency"}, true, false},
		{"16 threads (half of 32 Ps)", 16, append([]string{"GOMAXPROCS=32"}, idle...), true, false},
		{"17 threads (more than half of 32 Ps)", 17, append([]string{"GOMAXPROCS=32"}, idle...), false, true},
		{"40 threads, GOMAXPROCS=80", 40, append([]string{"GOMAXPROCS=80"}, idle...), true, false},
		{"no shared-memory transport", 1, append([]string{"GOXIO_SHM=0"}, idle...), false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := h.env(append([]string{"VMA_TRACELEVEL=DEBUG"}, c.env...)...)
			// The monitor is told apart by sampling the threads' system calls; on a busy machine
			// the library may not tell and then changes nothing (and says so): run again.
			var res testutil.Result
			for try := 1; ; try++ {
				res = runClient(t, env, 60*time.Second, prog, fmt.Sprint(c.threads))
				if try == 5 || !strings.Contains(string(res.Stderr), "monitor thread not found") {
					break
				}
				t.Logf("run %d: the library did not find the monitor thread; again", try)
			}
			out := strings.TrimSpace(string(res.Stdout))
			head := fmt.Sprintf("threads=%d idle=", c.threads)
			if !strings.HasPrefix(out, head) {
				t.Fatalf("shmthreads printed %q, want %q...; library log:\n%s", out, head, res.Stderr)
			}
			idleTIDs := strings.Fields(strings.TrimPrefix(out, head))
			m := quietLine.FindSubmatch(res.Stderr)
			wantQuietLine := c.quiet || c.loud
			if (m != nil) != wantQuietLine {
				t.Fatalf("library log has the SCHED_IDLE line: %v, want %v; log:\n%s", m != nil, wantQuietLine, res.Stderr)
			}
			if m != nil {
				if got := slices.Contains(idleTIDs, string(m[1])); got != c.quiet {
					t.Fatalf("monitor thread %s SCHED_IDLE at the end: %v, want %v (idle threads %v); log:\n%s",
						m[1], got, c.quiet, idleTIDs, res.Stderr)
				}
			}
			if got := strings.Contains(string(res.Stderr), "monitor thread gets its normal priority back"); got != c.loud {
				t.Fatalf("library log says the monitor got its priority back: %v, want %v; log:\n%s", got, c.loud, res.Stderr)
			}
			// Without GOMAXPROCS in the environment the runtime gets its Ps when the second
			// thread calls in, and only then (shim/procs.go).
			raise := fmt.Sprintf(`a second thread calls into goxio {"GOMAXPROCS": %d, "was": %d}`,
				max(runtime.NumCPU(), 32), runtime.NumCPU())
			wantRaise := c.threads >= 2 && !slices.ContainsFunc(c.env, func(e string) bool {
				return strings.HasPrefix(e, "GOMAXPROCS=") || e == "GOXIO_SHM=0"
			}) && runtime.NumCPU() < 32
			if got := strings.Contains(string(res.Stderr), raise); got != wantRaise {
				t.Fatalf("library log has %q: %v, want %v; log:\n%s", raise, got, wantRaise, res.Stderr)
			}
		})
	}
}

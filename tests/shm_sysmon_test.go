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

// TestShmSysmonThreads: the Go runtime's monitor thread runs SCHED_IDLE under the shared-memory
// transport (its wake-ups made the p99.9 of ping-pong), and it is the only idle thread: threads it
// starts get its former class (shim/sysmon.c). It stays idle only while at most half the runtime's
// Ps' worth of program threads have called into the library; past that a thread calling in could
// wait seconds for an idle-class monitor on a saturated machine (shim/threads.go).
// GOXIO_SHM_SYSMON=normal keeps its priority, and so does a process that could not give it back
// (an unprivileged user with RLIMIT_NICE below 20 and without CAP_SYS_NICE). tests/shm/shmthreads.c sends a checked
// datagram from each of N threads and lists its SCHED_IDLE threads; the monitor's thread id comes
// from the library's log.
func TestShmSysmonThreads(t *testing.T) {
	h := newShmHarness(t)
	prog := filepath.Join(filepath.Dir(h.udp), "shmthreads") // a folder every user can read
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "shm", "shmthreads.c"), prog, "-O2", "-Wall")
	quietLine := regexp.MustCompile(`monitor thread runs SCHED_IDLE \{"tid": (\d+)\}`)
	const keeps = "monitor thread keeps its priority"
	for _, c := range []struct {
		name    string
		threads int
		env     []string
		user    string // "nice0": as nobody with RLIMIT_NICE 0, "capnice": as nobody with CAP_SYS_NICE; "": root
		quiet   bool   // the monitor is SCHED_IDLE at the end
		loud    bool   // the library logs that it gave the priority back
		refused bool   // the library logs that it could not give an idle thread its class back
	}{
		{"one thread", 1, nil, "", true, false, false},
		{"two threads", 2, nil, "", true, false, false},
		{"GOXIO_SHM_SYSMON=normal", 2, []string{"GOXIO_SHM_SYSMON=normal"}, "", false, false, false},
		{"VMA_SPEC=latency", 2, []string{"VMA_SPEC=latency"}, "", true, false, false},
		{"16 threads (half of 32 Ps)", 16, []string{"GOMAXPROCS=32"}, "", true, false, false},
		{"17 threads (more than half of 32 Ps)", 17, []string{"GOMAXPROCS=32"}, "", false, true, false},
		{"40 threads, GOMAXPROCS=80", 40, []string{"GOMAXPROCS=80"}, "", true, false, false},
		{"no shared-memory transport", 1, []string{"GOXIO_SHM=0"}, "", false, false, false},
		{"nobody, RLIMIT_NICE 0", 2, nil, "nice0", false, false, true},
		{"nobody with CAP_SYS_NICE", 2, nil, "capnice", true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := h.env(append([]string{"VMA_TRACELEVEL=DEBUG"}, c.env...)...)
			// The monitor is told apart by sampling the threads' system calls; on a busy machine
			// the library may not tell and then changes nothing (and says so): run again.
			var res testutil.Result
			for try := 1; ; try++ {
				res = runSysmonProg(t, env, c.user, prog, c.threads)
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
			idlePart, slackPart, ok := strings.Cut(strings.TrimPrefix(out, head), "slack=")
			if !ok {
				t.Fatalf("shmthreads printed %q, no slack= list", out)
			}
			idleTIDs, slackTIDs := strings.Fields(idlePart), strings.Fields(slackPart)
			m := quietLine.FindSubmatch(res.Stderr)
			wantQuietLine := c.quiet || c.loud
			if (m != nil) != wantQuietLine {
				t.Fatalf("library log has the SCHED_IDLE line: %v, want %v; log:\n%s", m != nil, wantQuietLine, res.Stderr)
			}
			var want []string
			if c.quiet {
				want = []string{string(m[1])}
			}
			if !slices.Equal(idleTIDs, want) {
				t.Fatalf("SCHED_IDLE threads at the end %v, want %v (the monitor only, when quiet); log:\n%s",
					idleTIDs, want, res.Stderr)
			}
			// The monitor's timer slack is widened when the process may (CAP_SYS_NICE: root and
			// capnice), and no other thread's changes.
			var wantSlack []string
			if c.quiet && c.user != "nice0" {
				wantSlack = want
			}
			if !slices.Equal(slackTIDs, wantSlack) {
				t.Fatalf("threads with another timer slack than the main thread %v, want %v; log:\n%s",
					slackTIDs, wantSlack, res.Stderr)
			}
			if got := strings.Contains(string(res.Stderr), "monitor thread gets its normal priority back"); got != c.loud {
				t.Fatalf("library log says the monitor got its priority back: %v, want %v; log:\n%s", got, c.loud, res.Stderr)
			}
			refused := strings.Contains(string(res.Stderr), keeps) &&
				strings.Contains(string(res.Stderr), "could not get the monitor's class back")
			if refused != c.refused {
				t.Fatalf("library log says it could not give an idle thread its class back: %v, want %v; log:\n%s",
					refused, c.refused, res.Stderr)
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

// runSysmonProg runs prog N under env, as root (user "") or as nobody, with an RLIMIT_NICE of 0
// ("nice0": cannot leave SCHED_IDLE) or with CAP_SYS_NICE ("capnice"): prlimit and setpriv
// (util-linux) set the limit or the capability and drop to nobody, and env(1) gives the library
// to prog only.
func runSysmonProg(t *testing.T, env []string, user, prog string, n int) testutil.Result {
	t.Helper()
	if user == "" {
		return runClient(t, env, 60*time.Second, prog, fmt.Sprint(n))
	}
	drop := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}
	var args []string
	switch user {
	case "nice0":
		args = append([]string{"prlimit", "--nice=0:0", "--"}, drop...)
	case "capnice":
		args = append(drop, "--inh-caps=+sys_nice", "--ambient-caps=+sys_nice")
	default:
		t.Fatalf("runSysmonProg: unknown user %q", user)
	}
	args = append(append(append(args, "env"), env...), prog, fmt.Sprint(n))
	res := testutil.Run(testutil.Command(nil, args[0], args[1:]...), 60*time.Second)
	if res.ExitCode != 0 {
		t.Fatalf("%s: %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res,
			testutil.Tail(string(res.Stdout), 4000), testutil.Tail(string(res.Stderr), 4000))
	}
	return res
}

package tests

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestRuntimeProcs checks how many processors (Ps) the library's Go runtime starts with and
// gets once a second thread calls in: one per CPU the process may run on but at least two (a
// process on one CPU, under taskset here, had its only P taken back by the runtime's monitor at
// every blocking call the engine made), then at least 32 whatever the CPU count, so that threads
// calling in do not wait for the runtime's monitor to hand one back (shim/procs.go); exactly what
// GOMAXPROCS says, from the start, when the program's environment sets it. The raise itself is
// checked by TestShmSysmonThreads.
func TestRuntimeProcs(t *testing.T) {
	lib := integrationLib(t)
	line := regexp.MustCompile(`Go runtime \{"GOMAXPROCS": (\d+), "CPUs": (\d+), "from the second thread": (\d+), "raised at start to": (\d+)[,}]`)
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Fatalf("taskset (util-linux) is needed: %v", err)
	}
	ncpu := runtime.NumCPU()
	raisedDefault := 0 // the start's raise to two Ps, on a machine of one CPU only
	if ncpu < 2 {
		raisedDefault = 2
	}
	for _, c := range []struct {
		name, env         string
		pin               bool
		cpus, start, want int
		raised            int
	}{
		{"default", "", false, ncpu, max(ncpu, 2), max(ncpu, 32), raisedDefault},
		{"one CPU", "", true, 1, 2, 32, 2},
		{"GOMAXPROCS=1 on one CPU", "1", true, 1, 1, 1, 0},
		{"GOMAXPROCS=3", "3", false, ncpu, 3, 3, 0},
		{"GOMAXPROCS=40", "40", false, ncpu, 40, 40, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := append(os.Environ(), "LD_PRELOAD="+lib, "VMA_TRACELEVEL=DEBUG")
			if c.env != "" {
				env = append(env, "GOMAXPROCS="+c.env)
			}
			// The engine (and its runtime) loads at the first data call on an inet socket or wait
			// on one (a send to a port without a goxio socket alone does not load it, nor a wait
			// on a socket that was not bound and only sent so: shim/preload/lazy_ksend.c).
			prog, args := testutil.Python(t), []string{"-c",
				"import socket, select; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 0)); " +
					"s.sendto(b'x', ('127.0.0.1', 9)); select.select([s], [], [], 0)"}
			if c.pin {
				prog, args = taskset, append([]string{"-c", "0", prog}, args...)
			}
			res := runClient(t, env, 30*time.Second, prog, args...)
			m := line.FindSubmatch(res.Stderr)
			if m == nil {
				t.Fatalf("no \"Go runtime\" line in the library's log:\n%s", res.Stderr)
			}
			start, _ := strconv.Atoi(string(m[1]))
			cpus, _ := strconv.Atoi(string(m[2]))
			later, _ := strconv.Atoi(string(m[3]))
			raised, _ := strconv.Atoi(string(m[4]))
			if start != c.start || later != c.want || cpus != c.cpus || raised != c.raised {
				t.Fatalf("library reports GOMAXPROCS %d (%d from the second thread, raised at start to %d) with %d CPUs, want %d (%d, %d) with %d",
					start, later, raised, cpus, c.start, c.want, c.raised, c.cpus)
			}
			t.Logf("GOMAXPROCS %d, %d from the second thread", start, later)
		})
	}
}

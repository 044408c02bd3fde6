package tests

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestRuntimeProcs checks how many processors (Ps) the library's Go runtime starts with and
// gets once a second thread calls in: one per CPU, then at least 32 whatever the CPU count, so
// that threads calling in do not wait for the runtime's monitor to hand one back (shim/procs.go);
// exactly what GOMAXPROCS says, from the start, when the program's environment sets it. The raise
// itself is checked by TestShmSysmonThreads.
func TestRuntimeProcs(t *testing.T) {
	lib := integrationLib(t)
	line := regexp.MustCompile(`Go runtime \{"GOMAXPROCS": (\d+), "CPUs": (\d+), "from the second thread": (\d+)\}`)
	for _, c := range []struct {
		env         string
		start, want int
	}{
		{"", runtime.NumCPU(), max(runtime.NumCPU(), 32)},
		{"3", 3, 3},
		{"40", 40, 40},
	} {
		t.Run("GOMAXPROCS="+c.env, func(t *testing.T) {
			env := append(os.Environ(), "LD_PRELOAD="+lib, "VMA_TRACELEVEL=DEBUG")
			if c.env != "" {
				env = append(env, "GOMAXPROCS="+c.env)
			}
			// The engine (and its runtime) loads at the first data call on an inet socket.
			res := runClient(t, env, 30*time.Second, testutil.Python(t), "-c",
				"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', 9))")
			m := line.FindSubmatch(res.Stderr)
			if m == nil {
				t.Fatalf("no \"Go runtime\" line in the library's log:\n%s", res.Stderr)
			}
			start, _ := strconv.Atoi(string(m[1]))
			cpus, _ := strconv.Atoi(string(m[2]))
			later, _ := strconv.Atoi(string(m[3]))
			if start != c.start || later != c.want || cpus != runtime.NumCPU() {
				t.Fatalf("library reports GOMAXPROCS %d (%d from the second thread) with %d CPUs, want %d (%d) with %d",
					start, later, cpus, c.start, c.want, runtime.NumCPU())
			}
			t.Logf("GOMAXPROCS %d, %d from the second thread", start, later)
		})
	}
}

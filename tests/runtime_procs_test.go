package tests

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestRuntimeProcs checks how many processors (Ps) the library's Go runtime gets: at least 32
// whatever the CPU count, so that threads calling in do not wait for the runtime's monitor to
// hand one back (shim/procs.go), and exactly what GOMAXPROCS says when the program's environment
// sets it.
func TestRuntimeProcs(t *testing.T) {
	lib := integrationLib(t)
	line := regexp.MustCompile(`Go runtime \{"GOMAXPROCS": (\d+), "CPUs": (\d+)\}`)
	for _, c := range []struct {
		env  string
		want int
	}{
		{"", max(runtime.NumCPU(), 32)},
		{"3", 3},
		{"40", 40},
	} {
		t.Run("GOMAXPROCS="+c.env, func(t *testing.T) {
			env := append(os.Environ(), "LD_PRELOAD="+lib, "VMA_TRACELEVEL=DEBUG")
			if c.env != "" {
				env = append(env, "GOMAXPROCS="+c.env)
			}
			res := runClient(t, env, 30*time.Second, "/bin/true")
			m := line.FindSubmatch(res.Stderr)
			if m == nil {
				t.Fatalf("no \"Go runtime\" line in the library's log:\n%s", res.Stderr)
			}
			got, _ := strconv.Atoi(string(m[1]))
			cpus, _ := strconv.Atoi(string(m[2]))
			if got != c.want || cpus != runtime.NumCPU() {
				t.Fatalf("library reports GOMAXPROCS %d with %d CPUs, want %d with %d", got, cpus, c.want, runtime.NumCPU())
			}
			t.Logf("GOMAXPROCS %d", got)
		})
	}
}

package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestShmUDPEarlyWait: a blocking receive of a UDP socket in its early phase polls the kernel
// socket before it sleeps (shim/preload/early_wait.c), and still ends as the kernel's would.
// tests/shm/early_wait.c makes a socket per request against a server, with and without goxio
// (both runs must pass):
//   - echo: every answer is the request;
//   - intr: a SIGALRM handler without SA_RESTART that runs during the receive (30-120 us in, the
//     first 50 us of which poll) ends it with EINTR;
//   - restart: a handler with SA_RESTART lets the receive go on to its answer 5 ms later;
//   - restart_timeo: with SO_RCVTIMEO, a handler with SA_RESTART still ends it with EINTR (the
//     kernel does not restart a socket wait with a timeout);
//   - nonblock: an O_NONBLOCK socket's receive returns EAGAIN.
//
// (A round with a wrong result is tried twice more: a thread that loses its CPU just before the
// system call takes the handler before the wait, with or without goxio.)
// And the polling itself, counted with strace: with goxio the echo rounds poll (at least one
// poll per round); not when the client is pinned to one CPU (it would keep the server from
// answering), with VMA_RX_POLL=0, or without goxio.
func TestShmUDPEarlyWait(t *testing.T) {
	h := newShmHarness(t)
	bin := filepath.Join(t.TempDir(), "early_wait")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "shm", "early_wait.c"), bin, "-O2", "-Wall")
	kernel := testutil.Env("")
	goxio := h.env()
	ok := regexp.MustCompile(`(?m)^(\w+) ok (\d+) reached=(\d+) early=(\d+) retried=(\d+) calls=(-?\d+) loaded=(\d)$`)
	// serve runs a server for f, then stops it with "quit".
	serve := func(t *testing.T, env []string, f func(port int)) {
		t.Helper()
		if res, out := udpQuitServer(t, env, bin, f); res.ExitCode != 0 {
			t.Errorf("server: %s\n%s", res, out)
		}
	}
	for _, run := range []struct {
		name string
		env  []string
	}{{"kernel", kernel}, {"goxio", goxio}} {
		t.Run(run.name, func(t *testing.T) {
			serve(t, run.env, func(port int) {
				for _, c := range [][]string{{"echo", "30"}, {"intr"}, {"restart"}, {"restart_timeo"}, {"nonblock"}} {
					res := runClient(t, run.env, time.Minute, bin, append([]string{"client", strconv.Itoa(port)}, c...)...)
					m := ok.FindSubmatch(res.Stdout)
					if m == nil || string(m[1]) != c[0] {
						t.Fatalf("%s: %s\n%s", c[0], res, res.Stdout)
					}
					t.Logf("%s", strings.TrimSpace(string(res.Stdout)))
					if run.name == "goxio" && (string(m[6]) != "0" || string(m[7]) != "0") {
						t.Errorf("%s: the client entered the engine (calls=%s loaded=%s): its sockets left their early phase",
							c[0], m[6], m[7])
					}
				}
			})
		})
	}
	t.Run("polls", func(t *testing.T) {
		strace := testutil.Program(t, "strace", "strace")
		taskset := testutil.Program(t, "taskset", "util-linux")
		const rounds = 30
		// polls runs 30 echo rounds under strace and counts the client's poll calls.
		polls := func(t *testing.T, env []string, pin bool) int {
			t.Helper()
			var n int
			serve(t, goxio, func(port int) {
				// The server's engine publishes its socket when it loads, at the first
				// receive, after the kernel's bind that serve waited for: a client that
				// sent before that found no goxio receiver there (its sockets plain, no
				// early phase). An answered request means the socket is published.
				runClient(t, goxio, time.Minute, bin, "client", strconv.Itoa(port), "echo", "1")
				out := filepath.Join(t.TempDir(), "strace.out")
				args := []string{"-qq", "-e", "trace=poll", "-o", out}
				if pin {
					args = append(args, taskset, "-c", "0")
				}
				args = append(args, bin, "client", strconv.Itoa(port), "echo", strconv.Itoa(rounds))
				runClient(t, env, time.Minute, strace, args...)
				text, err := os.ReadFile(out)
				if err != nil {
					t.Fatalf("read strace output: %v", err)
				}
				n = len(regexp.MustCompile(`(?m)^poll\(`).FindAll(text, -1))
			})
			t.Logf("pinned %v: %d polls in %d rounds", pin, n, rounds)
			return n
		}
		if n := polls(t, goxio, false); n < rounds {
			t.Errorf("goxio, unpinned: %d polls in %d rounds, want at least one a round", n, rounds)
		}
		for _, c := range []struct {
			name string
			env  []string
			pin  bool
		}{
			{"pinned to one CPU", goxio, true},
			{"VMA_RX_POLL=0", h.env("VMA_RX_POLL=0"), false},
			{"without goxio", kernel, false},
		} {
			if n := polls(t, c.env, c.pin); n != 0 {
				t.Errorf("%s: %d polls in %d rounds, want none", c.name, n, rounds)
			}
		}
	})
	h.requireClean()
}

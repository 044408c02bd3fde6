package tests

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestShmUDPEarlyPhase: UDP sockets that talk with a goxio server are served in C until they
// keep talking (shim/preload/early.c). The program (tests/shm/early_udp.c) makes sockets one
// after the other against an echo server, each sending requests with sendto and reading the
// echoes back, compared, then closed; the same run without goxio gives the same output. It
// prints the calls it made into goxio's engine during the sockets after the first two (the
// first loads the engine) and the UDP datagrams the kernel sent meanwhile (both ends):
//   - one request per socket (a socket per request): no call into the engine, none loaded (the
//     first socket's early phase runs before any engine, shim/preload/lazy_ksend.c);
//   - 20 requests: the sockets move to rings at their third data call, and the kernel sends
//     fewer than half of the kernel run's datagrams;
//   - 100 requests sent back to back before the echoes are read: every echo arrives in the
//     order of the requests, though the first two went through the kernel and the others
//     through a ring (the first ring datagram is marked, and both ends take the kernel's
//     datagrams first: offload/transport/shm kernelfirst.go);
//   - against a server without goxio: no call into the engine (the destination has no goxio
//     receiver: the socket is plain for good at its first send).
func TestShmUDPEarlyPhase(t *testing.T) {
	h := newShmHarness(t)
	bin := filepath.Join(t.TempDir(), "early_udp")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "shm", "early_udp.c"), bin, "-O2", "-Wall")
	kernel := testutil.Env("")
	goxio := h.env()
	line := regexp.MustCompile(`(?m)^client socks=(\d+) msgs=(\d+) ok calls=(-?\d+) io=(\d+) loaded=(\d)$`)
	type outcome struct {
		calls, io, loaded int
		final             string // the client's VMA_STATS_FILE: each socket's counters at close
	}
	run := func(t *testing.T, srvEnv, cliEnv []string, args ...string) outcome {
		t.Helper()
		final := filepath.Join(t.TempDir(), "final")
		var res testutil.Result
		sres, sout := udpQuitServer(t, srvEnv, bin, func(port int) {
			res = runClient(t, append(cliEnv[:len(cliEnv):len(cliEnv)], "VMA_STATS_FILE="+final), 60*time.Second, bin,
				append([]string{"client", strconv.Itoa(port)}, args...)...)
		})
		m := line.FindSubmatch(res.Stdout)
		if m == nil || res.ExitCode != 0 || sres.ExitCode != 0 {
			t.Fatalf("client: %s\n%s%s\nserver:\n%s", res, res.Stdout, testutil.Tail(string(res.Stderr), 2000), sout)
		}
		atoi := func(b []byte) int { n, _ := strconv.Atoi(string(b)); return n }
		return outcome{calls: atoi(m[3]), io: atoi(m[4]), loaded: atoi(m[5]), final: final}
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"per request", []string{"30", "1"}},
		{"talking", []string{"30", "20"}},
		{"stream", []string{"60", "100", "stream"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := run(t, kernel, kernel, c.args...)
			g := run(t, goxio, goxio, c.args...)
			t.Logf("%s: engine calls %d; kernel datagrams %d (kernel run %d)", c.name, g.calls, g.io, k.io)
			switch c.name {
			case "per request":
				if g.calls != 0 || g.loaded != 0 {
					t.Errorf("sockets per request entered the engine %d times (engine loaded: %d)", g.calls, g.loaded)
				}
			case "talking", "stream":
				if g.calls == 0 || g.io*2 > k.io {
					t.Errorf("the sockets did not move to rings: %d engine calls, %d kernel datagrams against %d",
						g.calls, g.io, k.io)
				}
			}
			if c.name == "talking" {
				earlyCounted(t, g.final)
			}
		})
	}
	t.Run("server without goxio", func(t *testing.T) {
		for _, msgs := range []string{"1", "20"} {
			if o := run(t, kernel, goxio, "30", msgs); o.calls != 0 {
				t.Errorf("%s requests per socket to a server without goxio: %d engine calls", msgs, o.calls)
			}
		}
	})
	h.requireClean()
}

// earlyCounted checks the statistics of sockets that talked 20 requests each: each sent its first
// datagrams through the kernel in its early phase and received their echoes there, so every socket
// counts as many datagrams received through the kernel as it sent there, the first socket (made
// before the engine loaded, adopted at its third send) as the later ones (handed over by the
// preload library at their third data call).
func earlyCounted(t *testing.T, final string) {
	t.Helper()
	b, err := os.ReadFile(final)
	if err != nil {
		t.Fatalf("VMA_STATS_FILE: %v", err)
	}
	osLine := regexp.MustCompile(`(?m)^(Tx|Rx) OS info: \d+ / (\d+) /`)
	socks := 0
	for _, blk := range strings.Split(string(b), stats.Separator) {
		n := map[string]string{"Tx": "0", "Rx": "0"}
		for _, m := range osLine.FindAllStringSubmatch(blk, -1) {
			n[m[1]] = m[2]
		}
		if n["Tx"] == "0" {
			continue
		}
		socks++
		if n["Rx"] != n["Tx"] {
			t.Errorf("a socket sent %s datagrams through the kernel in its early phase and counts %s received there:\n%s",
				n["Tx"], n["Rx"], blk)
		}
	}
	if socks < 2 {
		t.Errorf("%d sockets with kernel sends in the final statistics, want every socket's:\n%s", socks, b)
	}
}

// udpQuitServer runs `bin server PORT`, a test program's UDP server on 127.0.0.1:PORT that ends
// when it receives "quit", under env while f runs with its port; then it sends "quit" (a killed
// server would leave its segments for a sweep) and returns the server's result and the tail of
// its output.
func udpQuitServer(t *testing.T, env []string, bin string, f func(port int)) (testutil.Result, string) {
	t.Helper()
	port := testutil.FreePort(t, "udp")
	srv := testutil.Start(t, filepath.Base(bin)+" server", env, bin, "server", strconv.Itoa(port))
	defer srv.Stop(time.Second)
	testutil.WaitBound(t, "udp", port, 10*time.Second, srv)
	f(port)
	if q, err := net.Dial("udp4", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		_, _ = q.Write([]byte("quit"))
		q.Close()
	}
	res := srv.Wait(30 * time.Second)
	return res, testutil.Tail(srv.Output(), 2000)
}

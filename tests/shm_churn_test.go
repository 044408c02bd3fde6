package tests

import (
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestShmSocketPerRequest: a client that makes a new UDP socket per request (socket, sendto,
// recv, close) or a TCP connection per request (connect, 1 byte each way, close), under goxio
// with the shared-memory transports on, against a server under goxio and one without: every
// answer arrives (a round without one fails the client after 2 s) and the client leaves no
// segment behind. A UDP socket that gets its port from its send opens no inbox for its one
// answer (it comes through the kernel socket), so this is the path that must not lose it.
// The client is the bench's (tests/bench/churn.c); ~2 s.
func TestShmSocketPerRequest(t *testing.T) {
	h := newShmHarness(t)
	bin := filepath.Join(t.TempDir(), "churn")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "bench", "churn.c"), bin, "-O2", "-Wall")
	line := regexp.MustCompile(`rounds=300 p50_us=`)
	for _, proto := range []string{"udp", "tcp"} {
		for _, peer := range []string{"goxio", "kernel"} {
			t.Run(proto+"/"+peer, func(t *testing.T) {
				env := h.env("GOXIO_SHM_TCP=1")
				senv := env
				if peer == "kernel" {
					senv = testutil.Env("")
				}
				port := testutil.FreePort(t, proto)
				srv := testutil.Start(t, "server", senv, bin, "server", proto, strconv.Itoa(port))
				if proto == "tcp" {
					testutil.WaitTCP(t, port, 10*time.Second, srv)
				} else {
					testutil.WaitBound(t, "udp", port, 10*time.Second, srv)
				}
				cmd := exec.Command(bin, "client", proto, strconv.Itoa(port), "300")
				cmd.Env = env
				res := testutil.Run(cmd, 60*time.Second)
				if res.ExitCode != 0 || !line.Match(res.Stdout) {
					t.Fatalf("client: %s\n%s%s", res, res.Stdout, res.Stderr)
				}
				if proto == "udp" && peer == "goxio" {
					// The client's ring into the server's inbox goes when the server next
					// looks at its inbox (the client's exit wakes nobody): one more datagram,
					// from a socket without goxio, makes it look.
					nudge(t, port)
				}
				deadline := time.Now().Add(5 * time.Second)
				for segs := h.segmentsOf(cmd.Process.Pid); len(segs) > 0; segs = h.segmentsOf(cmd.Process.Pid) {
					if time.Now().After(deadline) {
						t.Errorf("client left segments: %v", segs)
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
		}
	}
}

// nudge sends one datagram to 127.0.0.1:port from a socket of the test (no goxio).
func nudge(t *testing.T, port int) {
	t.Helper()
	c, err := net.Dial("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("n")); err != nil {
		t.Fatal(err)
	}
}

package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestShmTCPEarlyPhase: TCP connections between goxio processes are served in C until they may
// pair (shim/preload/early.c). The program (tests/shm/early.c) makes 30 connections one after the
// other against an echo server, each a number of messages written whole and read back and
// compared, then a shutdown, the EOF and close; the same run without goxio gives the same
// output. It prints the calls its threads made into goxio's engine during the connections after
// the first two (the first loads the engine, the second teaches the library where the listener
// is), and the read and write system calls it made meanwhile:
//   - one message each way (a connection per request): no call into the engine at either end;
//   - 20 messages: the connections pair (the connecting end at its 4th data call, the accepting
//     end when the table says so) and the data goes through rings: the kernel connections carry
//     less than a quarter of the bytes they carry without goxio (TCP_INFO's bytes acked and
//     received: the messages before the switch and the wake bytes). The read and write system
//     calls are only logged: each sleep of a peer costs a wake byte written and read, and how
//     often a peer sleeps depends on what else the machine runs;
//   - 200 messages written by one thread while another reads the echoes: the hand-over to the
//     engine waits for no call to be in the kernel, so the byte counts are right and every echo
//     is;
//   - against a peer without goxio: no call into the engine at the goxio end (the accepting end
//     learns from the peer's first byte that it will never pair; the connecting end from the
//     library's cache of destinations without a goxio listener);
//   - both ends under goxio with GOXIO_SHM_TCP=0: no call into the engine at either end (the
//     listener's accept makes plain fds; the connecting end's cache as above).
func TestShmTCPEarlyPhase(t *testing.T) {
	h := newShmHarness(t)
	bin := filepath.Join(t.TempDir(), "early")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "shm", "early.c"), bin, "-O2", "-Wall", "-pthread")
	const conns = 30
	kernel := testutil.Env("")
	goxio := h.tcpEnv()
	cliLine := regexp.MustCompile(`(?m)^client conns=(\d+) msgs=(\d+) ok calls=(-?\d+) io=(\d+) kbytes=(\d+)$`)
	srvLine := regexp.MustCompile(`(?m)^server conns=(\d+) calls=(-?\d+)$`)
	type outcome struct{ cliCalls, srvCalls, io, kbytes int }
	run := func(t *testing.T, srvEnv, cliEnv []string, args ...string) outcome {
		t.Helper()
		port := testutil.FreePort(t, "tcp")
		srv := testutil.Start(t, "early server", srvEnv, bin, "server", strconv.Itoa(port), strconv.Itoa(conns))
		testutil.WaitBound(t, "tcp", port, 10*time.Second, srv)
		res := runClient(t, cliEnv, 60*time.Second, bin, append([]string{"client", strconv.Itoa(port), strconv.Itoa(conns)}, args...)...)
		sres := srv.Wait(30 * time.Second)
		c, s := cliLine.FindSubmatch(res.Stdout), srvLine.FindSubmatch(sres.Stdout)
		if c == nil || s == nil || sres.ExitCode != 0 {
			t.Fatalf("client: %s\n%s%s\nserver: %s\n%s%s", res, res.Stdout, testutil.Tail(string(res.Stderr), 2000), sres,
				sres.Stdout, testutil.Tail(string(sres.Stderr), 2000))
		}
		atoi := func(b []byte) int { n, _ := strconv.Atoi(string(b)); return n }
		return outcome{cliCalls: atoi(c[3]), srvCalls: atoi(s[2]), io: atoi(c[4]), kbytes: atoi(c[5])}
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"per request", []string{"1", "1"}},
		{"paired", []string{"20", "100"}},
		{"duplex", []string{"200", "3000", "duplex"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := run(t, kernel, kernel, c.args...)
			g := run(t, goxio, goxio, c.args...)
			t.Logf("%s: engine calls client %d, server %d; read/write calls %d (kernel %d); kernel connection bytes %d (kernel %d)",
				c.name, g.cliCalls, g.srvCalls, g.io, k.io, g.kbytes, k.kbytes)
			switch c.name {
			case "per request":
				if g.cliCalls != 0 || g.srvCalls != 0 {
					t.Errorf("connections per request entered the engine: client %d calls, server %d", g.cliCalls, g.srvCalls)
				}
			case "paired":
				if g.cliCalls == 0 || g.srvCalls == 0 || g.kbytes*4 > k.kbytes {
					t.Errorf("the connections did not move to rings: engine calls client %d, server %d; "+
						"kernel connection bytes %d against %d without goxio", g.cliCalls, g.srvCalls, g.kbytes, k.kbytes)
				}
			}
		})
	}
	for _, c := range []struct {
		name     string
		srv, cli []string
		calls    func(outcome) int
	}{
		{"server only", goxio, kernel, func(o outcome) int { return o.srvCalls }},
		{"client only", kernel, goxio, func(o outcome) int { return o.cliCalls }},
		// the shared-memory TCP transport off: the listener's connections are the kernel's for
		// good, its accept makes plain fds in C (offload's plainListener)
		{"tcp transport off", h.env("GOXIO_SHM_TCP=0"), h.env("GOXIO_SHM_TCP=0"), func(o outcome) int { return o.srvCalls + o.cliCalls }},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := run(t, c.srv, c.cli, "3", "500")
			if n := c.calls(o); n != 0 {
				t.Errorf("%s: the goxio ends made %d calls into the engine on connections that stay on the kernel", c.name, n)
			}
		})
	}
	h.requireClean()
	if t.Failed() {
		t.Log(strings.TrimSpace(fmt.Sprint("libgoxio: ", h.lib)))
	}
}

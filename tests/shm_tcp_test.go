package tests

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// tcpEnv turns the shared-memory transports on, TCP included.
func (h *shmHarness) tcpEnv() []string { return h.env("GOXIO_SHM_TCP=1") }

// TestShmTCPIntegrity: one connection, both directions at once (a sender thread and a reader
// thread at the client, an echo server), 20 MB in random-size writes, hashes compared; both ends
// under the library with the shared-memory TCP transport, five times; then once with each end
// alone under the library (the connection stays on the kernel).
func TestShmTCPIntegrity(t *testing.T) {
	h := newShmHarness(t)
	py := testutil.Python(t)
	script := filepath.Join(testutil.RepoRoot(), "tests", "shm", "tcpecho.py")
	const n = 20_000_000
	plain := testutil.Env("", "GOXIO_SHM_DIR="+h.shmDir)
	for i, c := range []struct {
		name     string
		srv, cli []string
	}{
		{"paired", h.tcpEnv(), h.tcpEnv()}, {"paired", h.tcpEnv(), h.tcpEnv()}, {"paired", h.tcpEnv(), h.tcpEnv()},
		{"paired", h.tcpEnv(), h.tcpEnv()}, {"paired", h.tcpEnv(), h.tcpEnv()},
		{"server only", h.tcpEnv(), plain}, {"client only", plain, h.tcpEnv()},
	} {
		port := testutil.FreePort(t, "tcp")
		srv := testutil.Start(t, "tcpecho server", c.srv, py, script, "server", strconv.Itoa(port))
		testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
		res := runClient(t, c.cli, 60*time.Second, py, script, "client", strconv.Itoa(port), strconv.Itoa(n))
		want := fmt.Sprintf("client sent %d got %d same", n, n)
		if got := strings.TrimSpace(string(res.Stdout)); got != want {
			t.Errorf("%s run %d: %q, want %q\n%s", c.name, i, got, want, testutil.Tail(string(res.Stderr), 2000))
		}
		if sres := srv.Wait(30 * time.Second); sres.ExitCode != 0 {
			t.Errorf("%s run %d: server %s", c.name, i, sres)
		}
	}
	h.requireClean()
}

// TestShmTCPIperf3: iperf3 with both ends under the library and the shared-memory TCP transport
// completes, and the server's data connection received through the ring.
func TestShmTCPIperf3(t *testing.T) {
	h := newShmHarness(t)
	iperf := testutil.Program(t, "iperf3", "iperf3")
	port := testutil.FreePortBoth(t)
	srv := testutil.Start(t, "iperf3 server", h.tcpEnv(), iperf, "-s", "--json", "-B", "127.0.0.1", "-p", strconv.Itoa(port))
	testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
	cli := testutil.Start(t, "iperf3 client", h.tcpEnv(), iperf, "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "3", "--json")
	// The data connection's statistics while it runs (the server closes it at the end).
	time.Sleep(1500 * time.Millisecond)
	var ring, kern uint64
	for _, p := range h.stats(srv.Cmd.Process.Pid).Processes {
		for _, s := range p.Sockets {
			if s.Transport == stats.TransportSHM {
				ring += s.Counters.RxBytes
				kern += s.Counters.RxOSBytes
			}
		}
	}
	res := cli.Wait(40 * time.Second)
	if res.ExitCode != 0 {
		t.Fatalf("iperf3 client: %s\n%s", res, testutil.Tail(string(res.Stderr), 2000))
	}
	cr := parseIperf(t, "client", res.Stdout)
	if cr.End.SumReceived.Bytes <= 0 {
		t.Fatalf("received %.0f bytes", cr.End.SumReceived.Bytes)
	}
	t.Logf("iperf3 paired: %.1f Gbit/s; server after 1.5 s: %d bytes through rings, %d through the kernel",
		cr.End.SumReceived.BitsPerSecond/1e9, ring, kern)
	if ring == 0 || kern > ring/100 {
		t.Errorf("the server's data connection received %d bytes through rings and %d through the kernel", ring, kern)
	}
	srv.Stop(5 * time.Second)
}

// TestShmTCPKillPeer: the echo server is killed with SIGKILL in the middle of a 400 MB transfer;
// the client, paired through rings, gets the error the kernel gives it (EPIPE or ECONNRESET from
// a send), never a hang; without the library for reference.
func TestShmTCPKillPeer(t *testing.T) {
	h := newShmHarness(t)
	py := testutil.Python(t)
	script := filepath.Join(testutil.RepoRoot(), "tests", "shm", "tcpecho.py")
	for _, c := range []struct {
		name string
		env  []string
	}{{"kernel", testutil.Env("")}, {"paired", h.tcpEnv()}} {
		port := testutil.FreePort(t, "tcp")
		srv := testutil.Start(t, "tcpecho server", c.env, py, script, "server", strconv.Itoa(port))
		testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
		cli := testutil.Start(t, "tcpecho client", c.env, py, script, "client", strconv.Itoa(port), "400000000")
		time.Sleep(500 * time.Millisecond)
		if cli.Exited() {
			t.Fatalf("%s: the client ended before the kill: %s", c.name, cli.Output())
		}
		_ = syscall.Kill(srv.Cmd.Process.Pid, syscall.SIGKILL)
		srv.Wait(5 * time.Second)
		res := cli.Wait(30 * time.Second)
		if res.TimedOut {
			t.Fatalf("%s: the client hung after its peer was killed", c.name)
		}
		out := cli.Output()
		if res.ExitCode == 0 || !(strings.Contains(out, "BrokenPipeError") || strings.Contains(out, "ConnectionResetError")) {
			t.Errorf("%s: client %s, want a BrokenPipeError or ConnectionResetError\n%s", c.name, res, testutil.Tail(out, 1500))
		}
	}
	h.requireClean()
}

// TestShmTCPManyConnections: 5000 connections open at once between two processes under the
// library, each with two echoed exchanges (the second through the rings); while they are open
// the client's statistics show ring traffic; after they closed, the server has no more fds than
// before its first accept (but for the library's own few), and no segment is left.
func TestShmTCPManyConnections(t *testing.T) {
	h := newShmHarness(t)
	py := testutil.Python(t)
	script := filepath.Join(testutil.RepoRoot(), "tests", "shm", "manyconns.py")
	const n = 5000
	port := testutil.FreePort(t, "tcp")
	srv := h.start("manyconns server", h.tcpEnv(), nil, py, script, "server", strconv.Itoa(port), strconv.Itoa(n))
	srv.expect("listening", 20*time.Second)
	// Paired at the client's first data call (not at its default fourth, which two exchanges
	// never reach): 5000 segments at once is what this test is about.
	cli := h.start("manyconns client", h.env("GOXIO_SHM_TCP=1", "GOXIO_SHM_TCP_PAIR_AFTER=1"), nil, py, script, "client", strconv.Itoa(port), strconv.Itoa(n))
	if got := cli.expect("client ", 120*time.Second); got != fmt.Sprintf("client ok %d", n) {
		t.Fatalf("client: %q", got)
	}
	var ring uint64
	for _, p := range h.stats(cli.pid()).Processes {
		for _, s := range p.Sockets {
			if s.Transport == stats.TransportSHM {
				ring += s.Counters.RxBytes
			}
		}
	}
	if ring == 0 {
		t.Errorf("the client's statistics show no byte received through rings")
	}
	cli.say("close")
	cli.wait(60 * time.Second)
	line := srv.expect("server fds ", 120*time.Second)
	var before, after int
	if _, err := fmt.Sscanf(line, "server fds %d %d", &before, &after); err != nil {
		t.Fatalf("server: %q: %v", line, err)
	}
	if after-before > 4 {
		t.Errorf("server fds: %d before the first accept, %d after %d connections closed", before, after, n)
	}
	srv.wait(30 * time.Second)
	h.requireClean()
}

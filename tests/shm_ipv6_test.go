package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// ringTCP sums the bytes a process's (pid 0: every process's) connected TCP sockets of the
// family received through rings and through the kernel, and counts those sockets on the
// shared-memory transport.
func (h *shmHarness) ringTCP(pid, family int) (sockets int, ring, kern uint64) {
	var d statsDoc
	if pid == 0 {
		res := runStatsTool(h.t, "-k", h.statsDir, "-v", "5", "-c", "1", "--json")
		if res.code != 0 {
			h.t.Fatalf("goxio_stats --json: exit %d\n%s", res.code, res.stderr)
		}
		d = parseStatsDocs(h.t, res.stdout)[0]
	} else {
		d = h.stats(pid)
	}
	for _, p := range d.Processes {
		if pid != 0 && p.Process.Pid != pid {
			continue
		}
		for _, s := range p.Sockets {
			if s.Family != family || s.Proto() != "tcp" || s.Transport != stats.TransportSHM || !s.Peer.IsValid() {
				continue
			}
			sockets++
			ring += s.Counters.RxBytes
			kern += s.Counters.RxOSBytes
		}
	}
	return sockets, ring, kern
}

// TestShmIPv6Asyncio: Python's asyncio.start_server() without a host (an AF_INET and an AF_INET6
// listener) and clients connecting to "localhost" and to "::1", all under the library with the
// shared-memory TCP transport: 4 MB echoed intact each time, and the server's connection received
// them mostly through rings, in the family the client's resolver chose.
func TestShmIPv6Asyncio(t *testing.T) {
	h := newShmHarness(t)
	py := testutil.Python(t)
	script := filepath.Join(testutil.RepoRoot(), "tests", "shm", "dualstack.py")
	const n = 4_000_000
	port := testutil.FreePortBoth(t)
	srv := h.start("asyncio server", h.tcpEnv(), nil, py, script, "server", strconv.Itoa(port))
	if got := srv.expect("listening", 20*time.Second); got != "listening AF_INET AF_INET6" {
		t.Fatalf("server: %q, want listeners of both families", got)
	}
	for _, host := range []string{"localhost", "::1"} {
		// The client writes its 4 MB in a few calls: paired at its first call (not at the
		// default fourth), so that nearly every byte goes through rings.
		cli := h.start("asyncio client "+host, h.env("GOXIO_SHM_TCP=1", "GOXIO_SHM_TCP_PAIR_AFTER=1"), nil, py, script, "client", host, strconv.Itoa(port), strconv.Itoa(n))
		got := cli.expect("client ", 60*time.Second)
		m := regexp.MustCompile(`^client (AF_INET6?) sent (\d+) got (\d+) same$`).FindStringSubmatch(got)
		if m == nil || m[2] != strconv.Itoa(n) || m[3] != strconv.Itoa(n) {
			t.Fatalf("client %s: %q", host, got)
		}
		family := unix.AF_INET
		if m[1] == "AF_INET6" {
			family = unix.AF_INET6
		}
		if host == "::1" && family != unix.AF_INET6 {
			t.Errorf("client ::1 connected over %s", m[1])
		}
		socks, ring, kern := h.ringTCP(srv.pid(), family)
		t.Logf("client %s over %s; server: %d connection(s) on shm, %d bytes through rings, %d through the kernel",
			host, m[1], socks, ring, kern)
		// The bytes a client sends before the server's end attached go through the kernel
		// (offload/transport/shmtcp/late.go): after the first round trip, the stream comes
		// through rings.
		if socks != 1 || ring == 0 || kern > ring/100 {
			t.Errorf("client %s: server had %d %s connection(s) on shm with %d bytes through rings and %d through the kernel",
				host, socks, m[1], ring, kern)
		}
		cli.say("close")
		cli.wait(30 * time.Second)
	}
	srv.say("stop")
	srv.wait(30 * time.Second)
	h.requireClean()
}

// nodeDefaultServer is a Node.js HTTP server with Node's default listen: srv.listen(port), a
// dual-stack AF_INET6 socket on ::.
const nodeDefaultServer = `
const http = require('http');
const body = 'x'.repeat(Number(process.argv[3]));
const srv = http.createServer((req, res) => {
  res.writeHead(200, {'Content-Type': 'text/plain'});
  res.end(body);
});
srv.listen(Number(process.argv[2]), () => {
  const a = srv.address();
  console.log('listening ' + a.family + ' ' + a.address);
});
process.stdin.on('end', () => srv.close(() => process.exit(0)));
process.stdin.resume();
`

// TestShmIPv6Node: a Node.js HTTP server with Node's default listen, and wrk against it over
// ::1 and over 127.0.0.1 (an IPv4 client of the dual-stack listener), all under the library with
// the shared-memory TCP transport: wrk gets no errors, and while it runs the server's
// connections are on shm and receive through rings (statistics, as goxio_stats shows them).
func TestShmIPv6Node(t *testing.T) {
	h := newShmHarness(t)
	node := testutil.Program(t, "node", "nodejs")
	wrk := testutil.Program(t, "wrk", "wrk")
	dir := t.TempDir()
	js := filepath.Join(dir, "server.js")
	if err := os.WriteFile(js, []byte(nodeDefaultServer), 0o644); err != nil {
		t.Fatal(err)
	}
	port := testutil.FreePortBoth(t)
	srv := h.start("node server", h.tcpEnv(), nil, node, js, strconv.Itoa(port), "2000")
	if got := srv.expect("listening", 30*time.Second); got != "listening IPv6 ::" {
		t.Fatalf("node: %q, want a dual-stack listener on ::", got)
	}
	for _, c := range []struct {
		host   string
		family int
	}{{"[::1]", unix.AF_INET6}, {"127.0.0.1", unix.AF_INET6}} {
		url := fmt.Sprintf("http://%s:%d/", c.host, port)
		cli := testutil.Start(t, "wrk "+c.host, h.tcpEnv(), wrk, "-t1", "-c4", "-d3s", url)
		time.Sleep(1500 * time.Millisecond)
		socks, ring, kern := h.ringTCP(srv.pid(), c.family)
		res := cli.Wait(30 * time.Second)
		out := cli.Output()
		if res.ExitCode != 0 {
			t.Fatalf("wrk %s: %s\n%s", url, res, testutil.Tail(out, 2000))
		}
		req := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindStringSubmatch(out)
		if req == nil || strings.Contains(out, "Socket errors") || strings.Contains(out, "Non-2xx") {
			t.Errorf("wrk %s: errors or no rate\n%s", url, testutil.Tail(out, 2000))
			continue
		}
		t.Logf("wrk %s: %s requests/s; node: %d connection(s) on shm, %d bytes through rings, %d through the kernel",
			url, req[1], socks, ring, kern)
		if socks != 4 || ring == 0 || kern > ring/100 {
			t.Errorf("wrk %s: node had %d connection(s) on shm with %d bytes through rings and %d through the kernel",
				url, socks, ring, kern)
		}
	}
	srv.stdin.Close()
	srv.wait(30 * time.Second)
	h.requireClean()
}

// TestShmIPv6Nginx: nginx (a master and two forked workers) with listen [::]:port, and wrk over
// [::1], both under the library with the shared-memory TCP transport: no errors, and while wrk
// runs the workers' connections are on shm and receive through rings.
func TestShmIPv6Nginx(t *testing.T) {
	h := newShmHarness(t)
	nginx := testutil.Program(t, "nginx", "nginx")
	wrk := testutil.Program(t, "wrk", "wrk")
	prefix := t.TempDir()
	for _, d := range []string{"html", "tmp", "logs"} {
		if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(prefix, "html", "index.html"), []byte(strings.Repeat("nginx over IPv6\n", 200)), 0o644)
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // workers as nobody could not enter the test's temporary folder
	}
	port := testutil.FreePortBoth(t)
	cfg := strings.Replace(fmt.Sprintf(nginxConf, user, prefix, port), fmt.Sprintf("listen 127.0.0.1:%d;", port),
		fmt.Sprintf("listen [::]:%d;", port), 1)
	if !strings.Contains(cfg, "listen [::]:") {
		t.Fatalf("nginx configuration without the IPv6 listen line:\n%s", cfg)
	}
	conf := filepath.Join(prefix, "nginx.conf")
	writeFile(t, conf, []byte(cfg), 0o644)
	srv := testutil.Start(t, "nginx", h.tcpEnv(), nginx, "-p", prefix, "-c", conf)
	testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
	url := fmt.Sprintf("http://[::1]:%d/", port)
	cli := testutil.Start(t, "wrk", h.tcpEnv(), wrk, "-t1", "-c4", "-d3s", url)
	time.Sleep(1500 * time.Millisecond)
	socks, ring, kern := h.ringTCP(0, unix.AF_INET6)
	res := cli.Wait(30 * time.Second)
	out := cli.Output()
	srv.Stop(10 * time.Second)
	if res.ExitCode != 0 {
		t.Fatalf("wrk %s: %s\n%s", url, res, testutil.Tail(out, 2000))
	}
	rate := wrkRate.FindStringSubmatch(out)
	if rate == nil || wrkErrors.MatchString(out) {
		t.Fatalf("wrk %s: errors or no rate\n%s", url, testutil.Tail(out, 2000))
	}
	t.Logf("wrk %s: %s requests/s; %d IPv6 connection(s) on shm (both ends), %d bytes through rings, %d through the kernel",
		url, rate[1], socks, ring, kern)
	// wrk's 4 connections and nginx's 4: both ends of each on shm. Each connection's first
	// requests and answers go through the kernel (late pairing, offload/transport/shmtcp/late.go:
	// about 5 KB per connection here), the rest through rings.
	if socks != 8 || ring == 0 || kern > ring/10 {
		t.Errorf("%d IPv6 connection(s) on shm with %d bytes through rings and %d through the kernel", socks, ring, kern)
	}
	h.requireClean()
}

// socketsOf returns a process's sockets of the family and type (1 stream, 2 datagram).
func (h *shmHarness) socketsOf(pid, family, typ int) []stats.SocketSnapshot {
	var out []stats.SocketSnapshot
	for _, p := range h.stats(pid).Processes {
		for _, s := range p.Sockets {
			if p.Process.Pid == pid && s.Family == family && s.Type == typ {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestShmIPv6Rules: a libvma.conf rule with an IPv6 address ("use os tcp_server [::]:PORT")
// sends the asyncio server's IPv6 listener, so its connections, to the kernel with the rule in
// the statistics, while its IPv4 connection (0.0.0.0 is not [::] for an IPv6 rule) stays on shm; the server's AF_INET6
// UDP socket on [::1] is on shm (no rule names UDP).
func TestShmIPv6Rules(t *testing.T) {
	h := newShmHarness(t)
	py := testutil.Python(t)
	script := filepath.Join(testutil.RepoRoot(), "tests", "shm", "dualstack.py")
	port := testutil.FreePortBoth(t)
	rules := filepath.Join(t.TempDir(), "libvma.conf")
	// A listener's rule matches its bound address: asyncio's AF_INET6 listener is on [::].
	writeFile(t, rules, []byte(fmt.Sprintf("use os tcp_server [::]:%d\n", port)), 0o644)
	srv := h.start("asyncio server", h.env("GOXIO_SHM_TCP=1", "VMA_CONFIG_FILE="+rules), nil, py, script, "server", strconv.Itoa(port))
	srv.expect("listening", 20*time.Second)
	for _, c := range []struct {
		host      string
		family    int
		transport stats.Transport
		reason    stats.Reason
	}{
		{"127.0.0.1", unix.AF_INET, stats.TransportSHM, stats.ReasonNone},
		{"::1", unix.AF_INET6, stats.TransportOS, stats.ReasonRule},
	} {
		cli := h.start("asyncio client "+c.host, h.tcpEnv(), nil, py, script, "client", c.host, strconv.Itoa(port), "100000")
		if got := cli.expect("client ", 60*time.Second); !strings.HasSuffix(got, "same") {
			t.Fatalf("client %s: %q", c.host, got)
		}
		var conns, listeners []stats.SocketSnapshot
		for _, s := range h.socketsOf(srv.pid(), c.family, unix.SOCK_STREAM) {
			if s.Peer.IsValid() {
				conns = append(conns, s)
			} else {
				listeners = append(listeners, s)
			}
		}
		if len(listeners) != 1 || listeners[0].Transport != c.transport || listeners[0].Reason != c.reason {
			t.Errorf("client %s: server listeners %+v, want one on %v (reason %v)", c.host, listeners, c.transport, c.reason)
		}
		if c.reason == stats.ReasonRule {
			// The kernel serves the listener and what it accepts (the engine sees only closes).
			if len(listeners) == 1 && !strings.Contains(listeners[0].Rule, "[::]:") {
				t.Errorf("client %s: rule %q", c.host, listeners[0].Rule)
			}
			if len(conns) != 0 {
				t.Errorf("client %s: connections of a listener on the kernel in the engine: %+v", c.host, conns)
			}
		} else if len(conns) != 1 || conns[0].Transport != stats.TransportSHM {
			t.Errorf("client %s: server connections %+v, want one on shm", c.host, conns)
		}
		cli.say("close")
		cli.wait(30 * time.Second)
	}
	udp := h.socketsOf(srv.pid(), unix.AF_INET6, unix.SOCK_DGRAM)
	if len(udp) != 1 || udp[0].Transport != stats.TransportSHM || udp[0].Reason != stats.ReasonNone ||
		udp[0].Local.String() != fmt.Sprintf("[::1]:%d", port) {
		t.Errorf("server's IPv6 UDP sockets: %+v, want one on shm, local [::1]:%d", udp, port)
	}
	srv.say("stop")
	srv.wait(30 * time.Second)
	h.requireClean()
}

// TestShmIPv6UDP: a UDP ping-pong (tests/bench/pp6.c) under the library with the shared-memory
// transport, server and client AF_INET6 over ::1, then an IPv4 client of a dual-stack server on
// [::]: every round trip completes and the server's AF_INET6 socket is on shm with its bytes
// through the rings (the kernel carries none beyond a first datagram or two).
func TestShmIPv6UDP(t *testing.T) {
	h := newShmHarness(t)
	pp6 := filepath.Join(t.TempDir(), "pp6")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "bench", "pp6.c"), pp6, "-O2")
	for _, c := range []struct{ server, client string }{{"::1", "::1"}, {"::", "127.0.0.1"}} {
		port := testutil.FreePortBoth(t)
		srv := h.start("pp6 server "+c.server, h.env(), nil, pp6, "server", "udp", c.server, strconv.Itoa(port))
		time.Sleep(300 * time.Millisecond)
		cli := h.start("pp6 client "+c.client, h.env(), nil, pp6, "client", "udp", c.client, strconv.Itoa(port), "1", "64")
		line := cli.expect("rtts=", 30*time.Second)
		cli.wait(30 * time.Second)
		var rtts int
		var avg float64
		if _, err := fmt.Sscanf(line, "rtts=%d avg_us=%f", &rtts, &avg); err != nil || rtts < 1000 {
			t.Fatalf("client of %s over %s: %q", c.server, c.client, line)
		}
		socks := h.socketsOf(srv.pid(), unix.AF_INET6, unix.SOCK_DGRAM)
		if len(socks) != 1 || socks[0].Transport != stats.TransportSHM {
			t.Fatalf("server on %s: AF_INET6 UDP sockets %+v, want one on shm", c.server, socks)
		}
		ctr := socks[0].Counters
		t.Logf("server on %s, client to %s: %d round trips, %.2f us; server socket received %d bytes through rings, %d through the kernel",
			c.server, c.client, rtts, avg, ctr.RxBytes, ctr.RxOSBytes)
		if ctr.RxBytes < uint64(rtts)*64 || ctr.RxOSBytes > 64*4 {
			t.Errorf("server on %s: %d bytes through rings, %d through the kernel, for %d round trips of 64 bytes",
				c.server, ctr.RxBytes, ctr.RxOSBytes, rtts)
		}
		srv.kill()
	}
}

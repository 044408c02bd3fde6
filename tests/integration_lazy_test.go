package tests

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// The engine on demand (shim/preload/loader.c): a process loads libgoxio-engine.so at its first
// data call or wait on an inet socket, adopts what it made before, and a prefork server's workers
// load their own.

// shmEnv is the shared-memory transports' switches, for the server and the client.
var shmEnv = []string{"GOXIO_SHM=1", "GOXIO_SHM_TCP=1"}

// offEnv turns the shared-memory transports (on by default) off: the engine's kernel path.
var offEnv = []string{"GOXIO_SHM=0", "GOXIO_SHM_TCP=0"}

// TestLazyNoEngine runs programs that make no inet socket, or make one and never move data on it,
// under the library: no engine mapped, no extra thread, no banner, no statistics segment.
func TestLazyNoEngine(t *testing.T) {
	lib := integrationLib(t)
	py := testutil.Python(t)
	script := `import os, socket
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.socket(); c.connect(s.getsockname()); a, _ = s.accept()
maps = open("/proc/self/maps").read()
print("engine mapped:", "libgoxio-engine" in maps)
print("threads:", len(os.listdir("/proc/self/task")))
print("stats segment:", os.path.exists("/tmp/goxiostat.%d" % os.getpid()))
`
	for _, prog := range [][]string{
		{"/bin/sh", "-c", "grep -c libgoxio-engine /proc/self/maps; ls /proc/self/task | wc -l"},
		{py, "-c", script},
	} {
		with := sameWithoutEngine(t, lib, prog)
		if !bytes.Contains(with, []byte("0\n")) && !bytes.Contains(with, []byte("engine mapped: False")) {
			t.Errorf("%s: engine mapped:\n%s", prog[0], with)
		}
	}
}

// sameWithoutEngine runs prog without and with the library, checks that both print the same and
// that the library says nothing on stderr (a banner would say that the engine loaded), and returns
// the output with the library.
func sameWithoutEngine(t *testing.T, lib string, prog []string) []byte {
	t.Helper()
	without := runClient(t, testutil.Env(""), 30*time.Second, prog[0], prog[1:]...)
	with := runClient(t, testutil.Env(lib), 30*time.Second, prog[0], prog[1:]...)
	if !bytes.Equal(with.Stdout, without.Stdout) {
		t.Errorf("%s: with the library:\n%s\nwithout:\n%s", prog[0], with.Stdout, without.Stdout)
	}
	if len(with.Stderr) != 0 {
		t.Errorf("%s: stderr with the library (no banner expected):\n%s", prog[0], with.Stderr)
	}
	t.Logf("%s:\n%s", prog[0], with.Stdout)
	return with.Stdout
}

// TestLazyNoEngineClient runs a client of servers without goxio under the library (this test's own
// TCP and UDP echo servers): Python with a TCP connection, a connected UDP socket and an
// unconnected UDP sender, and curl against an HTTP server. Their connects find no goxio socket
// at the address and their sends no goxio receiver (shim/preload/lazy_ksend.c): same output as
// without the library, and no engine, no extra thread, no banner, no statistics segment.
func TestLazyNoEngineClient(t *testing.T) {
	lib := integrationLib(t)
	py := testutil.Python(t)
	curl := testutil.Program(t, "curl", "curl")
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 4)
				if _, err := io.ReadFull(c, b); err == nil {
					_, _ = c.Write(append([]byte("echo:"), b...))
				}
			}()
		}
	}()
	uport, udpGot := udpEcho(t, "echo:")
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s\n", r.URL.Path)
	}))
	t.Cleanup(web.Close)
	script := `import os, socket, sys
tport, uport = int(sys.argv[1]), int(sys.argv[2])
c = socket.create_connection(("127.0.0.1", tport)); c.sendall(b"ping")
print("tcp:", c.recv(64)); c.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.connect(("127.0.0.1", uport)); u.send(b"conn")
print("udp connected:", u.recv(64)); u.close()
v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(100): v.sendto(b"plain", ("127.0.0.1", uport))
maps = open("/proc/self/maps").read()
print("engine mapped:", "libgoxio-engine" in maps)
print("threads:", len(os.listdir("/proc/self/task")))
print("stats segment:", os.path.exists("/tmp/goxiostat.%d" % os.getpid()))
`
	tport := l.Addr().(*net.TCPAddr).Port
	for _, prog := range [][]string{
		{py, "-c", script, strconv.Itoa(tport), strconv.Itoa(uport)},
		{curl, "-sS", "--fail", "--max-time", "20", web.URL + "/x"}, // a banner on stderr would say it loaded
	} {
		if with := sameWithoutEngine(t, lib, prog); bytes.Contains(with, []byte("engine mapped: True")) {
			t.Errorf("%s: engine mapped:\n%s", prog[0], with)
		}
	}
	if n := udpGot.Load(); n != 2*101 {
		t.Errorf("the UDP server got %d datagrams, want %d", n, 2*101)
	}
}

// TestLazyLoadRaces: the late load with many threads making their first data call together, a
// signal storm, a fork during the load, and a first data call from a signal handler (which goes
// to the kernel, said once). Bounded in time; same transcript with and without the library.
func TestLazyLoadRaces(t *testing.T) {
	lib := integrationLib(t)
	bin := filepath.Join(t.TempDir(), "races")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "lazy", "races.c"), bin, "-O2")
	want := runClient(t, testutil.Env(""), 30*time.Second, bin)
	for i := range 5 {
		for _, env := range [][]string{testutil.Env(lib), testutil.Env(lib, shmEnv...)} {
			got := runClient(t, env, 30*time.Second, bin)
			if !bytes.Equal(got.Stdout, want.Stdout) {
				t.Fatalf("run %d: with the library:\n%s\nwithout:\n%s\nstderr:\n%s", i, got.Stdout, want.Stdout, got.Stderr)
			}
			if n := strings.Count(string(got.Stderr), "inside a signal handler"); n != 1 {
				t.Fatalf("run %d: the handler's kernel call said %d times, want once:\n%s", i, n, got.Stderr)
			}
		}
	}
	t.Logf("transcript:\n%s", want.Stdout)
}

// statsOf returns the statistics of pid (goxio_stats --json), or nil when it has no segment.
func statsOf(t *testing.T, pid int) *stats.Snapshot {
	t.Helper()
	r := runStatsTool(t, "--json", "-c", "1", "-F", "-p", strconv.Itoa(pid))
	if r.code != 0 {
		return nil
	}
	for _, d := range parseStatsDocs(t, r.stdout) {
		for _, p := range d.Processes {
			if p.Process.Pid == pid {
				return p
			}
		}
	}
	return nil
}

// ringSockets counts the sockets of p on shared memory that moved bytes through the rings.
func ringSockets(p *stats.Snapshot) int {
	n := 0
	if p == nil {
		return 0
	}
	for _, s := range p.Sockets {
		if s.Transport == stats.TransportSHM && s.Counters.RxBytes > 0 && s.Counters.TxBytes > 0 {
			n++
		}
	}
	return n
}

// hasEngine reports whether process pid has the engine mapped.
func hasEngine(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	return err == nil && bytes.Contains(b, []byte("libgoxio-engine.so"))
}

// TestLazyPreforkNginx: nginx in its usual configuration (master and 2 workers), server and
// client over shared-memory TCP: the master has no engine and no statistics, the workers serve
// their connections through rings (goxio_stats), and the answers are the kernel's.
func TestLazyPreforkNginx(t *testing.T) {
	lib := integrationLib(t)
	nginx := testutil.Program(t, "nginx", "nginx")
	wrk := testutil.Program(t, "wrk", "wrk")
	curl := testutil.Program(t, "curl", "curl")
	var bodies [][]byte
	for _, m := range testutil.MainModes {
		t.Run(m.Name, func(t *testing.T) {
			prefix := t.TempDir()
			for _, d := range []string{"html", "tmp", "logs"} {
				if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			big := bytes.Repeat([]byte("prefork-0123456789\n"), 5000)
			writeFile(t, filepath.Join(prefix, "html", "index.html"), big, 0o644)
			user := ""
			if os.Geteuid() == 0 {
				user = "user root;"
			}
			port := testutil.FreePort(t, "tcp")
			conf := filepath.Join(prefix, "nginx.conf")
			writeFile(t, conf, []byte(fmt.Sprintf(nginxConf, user, prefix, port)), 0o644)
			srv := testutil.Start(t, "nginx", m.ServerEnv(lib, shmEnv...), nginx, "-p", prefix, "-c", conf)
			testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
			waitWorkers(t, srv, 2)
			base := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
			env := m.ClientEnv(lib, shmEnv...)
			res := runClient(t, env, 20*time.Second, curl, "-sS", "--fail", "--max-time", "15", base)
			bodies = append(bodies, res.Stdout)
			if !bytes.Equal(res.Stdout, big) {
				t.Fatalf("curl: got %d bytes, want %d", len(res.Stdout), len(big))
			}
			load := testutil.Start(t, "wrk", env, wrk, "-d", "3", "-t", "1", "-c", "8", "--timeout", "5s", base)
			time.Sleep(1500 * time.Millisecond)
			master := srv.Cmd.Process.Pid
			workers := testutil.Children(master)
			offloaded := 0
			for _, w := range workers {
				p := statsOf(t, w)
				offloaded += ringSockets(p)
				t.Logf("worker %d: engine %v, %d sockets through rings", w, hasEngine(w), ringSockets(p))
			}
			if m.Server && m.Client && offloaded == 0 {
				t.Errorf("no worker connection went through the rings (workers %v)", workers)
			}
			if m.Server {
				if hasEngine(master) {
					t.Errorf("the nginx master (pid %d) loaded the engine", master)
				}
				if statsOf(t, master) != nil {
					t.Errorf("goxio_stats lists the nginx master (pid %d), which has no engine", master)
				}
			}
			out := load.Wait(30 * time.Second)
			if e := wrkErrors.FindString(string(out.Stdout)); e != "" || out.ExitCode != 0 {
				t.Fatalf("wrk: %s %s\n%s", out, e, out.Stdout)
			}
			t.Logf("wrk: %s", wrkRate.FindString(string(out.Stdout)))
		})
	}
}

// forkingServer is Python's socketserver.ForkingTCPServer: the parent accepts, a child forked
// per connection serves it (upper-cases lines until EOF).
const forkingServer = `import socketserver, sys
class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line.upper())
            self.wfile.flush()
socketserver.ForkingTCPServer.allow_reuse_address = True
with socketserver.ForkingTCPServer(("127.0.0.1", int(sys.argv[1])), H) as s:
    print("listening", flush=True)
    s.serve_forever()
`

// forkingClient sends lines on one connection, checks the answers, then keeps the connection
// open until stdin closes (while the test reads the statistics).
const forkingClient = `import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = c.makefile("rwb")
ok = 0
for i in range(2000):
    line = b"line %d of the forking test\n" % i
    f.write(line); f.flush()
    ok += f.readline() == line.upper()
print("answers right:", ok, flush=True)
sys.stdin.read()
c.close()
`

// TestLazyForkingServer: a fork-per-connection server (socketserver.ForkingTCPServer) over
// shared-memory TCP: each child loads its own engine and serves its connection through rings.
func TestLazyForkingServer(t *testing.T) {
	lib := integrationLib(t)
	py := testutil.Python(t)
	dir := t.TempDir()
	srvPy, cliPy := filepath.Join(dir, "server.py"), filepath.Join(dir, "client.py")
	writeFile(t, srvPy, []byte(forkingServer), 0o644)
	writeFile(t, cliPy, []byte(forkingClient), 0o644)
	var outs []string
	for _, m := range testutil.MainModes {
		t.Run(m.Name, func(t *testing.T) {
			port := testutil.FreePort(t, "tcp")
			srv := testutil.Start(t, "server", m.ServerEnv(lib, shmEnv...), py, srvPy, strconv.Itoa(port))
			testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
			cli := testutil.Command(m.ClientEnv(lib, shmEnv...), py, cliPy, strconv.Itoa(port))
			stdin, err := cli.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var out testutil.SyncBuffer
			cli.Stdout = &out
			cli.Stderr = &out
			if err := cli.Start(); err != nil {
				t.Fatal(err)
			}
			defer cli.Process.Kill()
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(out.String(), "answers right") {
				if time.Now().After(deadline) {
					t.Fatalf("client: no answer in 30 s:\n%s", out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			children := testutil.Children(srv.Cmd.Process.Pid)
			offloaded := 0
			for _, c := range children {
				offloaded += ringSockets(statsOf(t, c))
			}
			if m.Server && m.Client && offloaded == 0 {
				t.Errorf("the server's children %v served no connection through the rings", children)
			}
			if m.Server && hasEngine(srv.Cmd.Process.Pid) {
				t.Errorf("the accepting parent loaded the engine")
			}
			stdin.Close()
			if err := cli.Wait(); err != nil {
				t.Fatalf("client: %v\n%s", err, out.String())
			}
			line := out.String()
			if i := strings.Index(line, "answers right"); i >= 0 {
				line = line[i:]
			}
			outs = append(outs, line)
			t.Logf("children %v, %d through rings; client: %s", children, offloaded, strings.TrimSpace(line))
		})
	}
	if len(outs) == 2 && outs[0] != outs[1] {
		t.Errorf("client output with the library %q, without %q", outs[1], outs[0])
	}
}

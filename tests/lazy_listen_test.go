package tests

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goxio/goxio/offload/discovery"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// Listeners of a process that has not loaded its engine are published from C
// (shim/preload/lazy_listen.c), so that clients with an engine pair with event-loop servers whose
// engine loads only at their first accepted connection (redis, asyncio, Node, iperf3's server).

// lazyListeners drives tests/lazy/listeners.c.
type lazyListeners struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	pid   int
	ports [5]uint16
}

func startLazyListeners(t *testing.T, bin string, env []string) *lazyListeners {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &lazyListeners{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := l.line()
	f := strings.Fields(line)
	if len(f) != 7 || f[0] != "ready" {
		t.Fatalf("listeners said %q", line)
	}
	l.pid, _ = strconv.Atoi(f[1])
	for i := range l.ports {
		p, _ := strconv.Atoi(f[2+i])
		l.ports[i] = uint16(p)
	}
	return l
}

func (l *lazyListeners) line() string {
	l.t.Helper()
	type res struct {
		s   string
		err error
	}
	c := make(chan res, 1)
	go func() { s, err := l.out.ReadString('\n'); c <- res{s, err} }()
	select {
	case r := <-c:
		if r.err != nil {
			l.t.Fatalf("listeners: %v (read %q)", r.err, r.s)
		}
		return strings.TrimSpace(r.s)
	case <-time.After(30 * time.Second):
		l.t.Fatal("listeners: no answer in 30 s")
	}
	return ""
}

func (l *lazyListeners) do(cmd string) {
	l.t.Helper()
	if _, err := io.WriteString(l.in, cmd+"\n"); err != nil {
		l.t.Fatal(err)
	}
	if got := l.line(); got != "ok" {
		l.t.Fatalf("%s: answered %q", cmd, got)
	}
}

// wantListeners is what the directory must hold for the program's listeners still open.
func (l *lazyListeners) want(lazy bool, which string) []discovery.Entry {
	all := []discovery.Entry{
		{Family: syscall.AF_INET, Local: netip.MustParseAddrPort("127.0.0.1:" + strconv.Itoa(int(l.ports[0])))},
		{Family: syscall.AF_INET6, Local: netip.MustParseAddrPort("[::]:" + strconv.Itoa(int(l.ports[1]))), V6Only: true},
		{Family: syscall.AF_INET6, Local: netip.MustParseAddrPort("[::]:" + strconv.Itoa(int(l.ports[2])))},
		{Family: syscall.AF_INET6, Local: netip.MustParseAddrPort("[::1]:" + strconv.Itoa(int(l.ports[3]))), V6Only: true},
		{Family: syscall.AF_INET, Local: netip.MustParseAddrPort("0.0.0.0:" + strconv.Itoa(int(l.ports[4])))},
	}
	var out []discovery.Entry
	for i, e := range all {
		if !strings.ContainsRune(which, rune('A'+i)) {
			continue
		}
		e.Stream, e.Lazy, e.PID = true, lazy, l.pid
		e.Inbox = fmt.Sprintf("goxio.%d.tcp.%d", os.Geteuid(), l.pid)
		out = append(out, e)
	}
	return out
}

// listenersOf returns the directory's listener entries of pid, in a stable order.
func listenersOf(t *testing.T, shmDir string, pid int) []discovery.Entry {
	t.Helper()
	ns, err := discovery.NetNS()
	if err != nil {
		t.Fatal(err)
	}
	d, err := discovery.Open(shmDir, os.Geteuid(), ns)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var out []discovery.Entry
	for _, e := range d.Listeners() {
		if e.PID == pid {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Local.Port() < out[j].Local.Port() })
	return out
}

func sameEntries(got, want []discovery.Entry) bool {
	sort.Slice(want, func(i, j int) bool { return want[i].Local.Port() < want[j].Local.Port() })
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestLazyListenEntries: the entries the preload library writes for a process without its engine
// are read back by the Go directory with every field right (family, bound address and port,
// V6Only, listener, lazy, owner, label), go with close and dup2, are taken over in place by the
// engine when it loads (none lost, none twice), are not written when the environment turns
// shared-memory TCP off, are withdrawn by an engine that turns out to have it off, and go at exit.
func TestLazyListenEntries(t *testing.T) {
	lib := integrationLib(t)
	bin := filepath.Join(t.TempDir(), "listeners")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "lazy", "listeners.c"), bin, "-O2")
	check := func(t *testing.T, shmDir string, l *lazyListeners, lazy bool, which string) {
		t.Helper()
		got, want := listenersOf(t, shmDir, l.pid), l.want(lazy, which)
		if !sameEntries(got, want) {
			t.Fatalf("directory entries of pid %d:\n got %+v\nwant %+v", l.pid, got, want)
		}
	}
	env := func(shmDir string, extra ...string) []string {
		return testutil.Env(lib, append([]string{"GOXIO_SHM=1", "GOXIO_SHM_TCP=1", "GOXIO_SHM_DIR=" + shmDir,
			"VMA_TRACELEVEL=WARN"}, extra...)...)
	}

	t.Run("published", func(t *testing.T) {
		shmDir := t.TempDir()
		l := startLazyListeners(t, bin, env(shmDir))
		check(t, shmDir, l, true, "ABCDE")
		if hasEngine(l.pid) {
			t.Fatal("the program loaded the engine: the entries are not the preload library's")
		}
		l.do("fork") // a child closes its copies and exits: the entries are the parent's
		check(t, shmDir, l, true, "ABCDE")
		l.do("close A")
		l.do("dup2 B")
		check(t, shmDir, l, true, "CDE")
		l.do("load")
		if !hasEngine(l.pid) {
			t.Fatal("no engine after a data call")
		}
		check(t, shmDir, l, false, "CDE") // taken over: the same three, no longer lazy
		l.do("exit")
		l.cmd.Wait()
	})

	t.Run("exit", func(t *testing.T) {
		shmDir := t.TempDir()
		l := startLazyListeners(t, bin, env(shmDir))
		check(t, shmDir, l, true, "ABCDE")
		l.do("exit")
		l.cmd.Wait()
		check(t, shmDir, l, true, "")
	})

	t.Run("off", func(t *testing.T) {
		for _, off := range [][]string{{"GOXIO_SHM_TCP=0"}, {"GOXIO_SHM=off"}, {"GOXIO_SHM_TCP=no"}} {
			shmDir := t.TempDir()
			l := startLazyListeners(t, bin, env(shmDir, off...))
			check(t, shmDir, l, true, "")
			l.do("exit")
		}
	})

	// A listener's number taken by a UDP socket: a wait on it loads the engine as on any UDP
	// socket (the C side forgot what it noted of the listener).
	t.Run("reuse", func(t *testing.T) {
		shmDir := t.TempDir()
		l := startLazyListeners(t, bin, env(shmDir))
		l.do("reuse A")
		if !hasEngine(l.pid) {
			t.Error("a poll on a UDP socket that took a closed listener's number did not load the engine")
		}
		check(t, shmDir, l, false, "BCDE")
		l.do("exit")
	})

	// A daemon: the parent listens, forks and exits; the child's first wait on the listener
	// publishes it as the child's (the parent's entry went with the parent's exit).
	t.Run("daemon", func(t *testing.T) {
		shmDir := t.TempDir()
		py := testutil.Python(t)
		script := `import os, select, socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
if os.fork() != 0:
    os.write(1, b"parent %d %d\n" % (os.getpid(), s.getsockname()[1]))
    sys.exit(0)
select.select([s], [], [], 0)
os.write(1, b"child %d\n" % os.getpid())
sys.stdin.read()
`
		cmd := exec.Command(py, "-c", script)
		cmd.Env = env(shmDir)
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer in.Close() // the child ends at the end of its stdin
		l := &lazyListeners{t: t, out: bufio.NewReader(out)}
		var parent, child, port int
		for parent == 0 || child == 0 {
			f := strings.Fields(l.line())
			switch {
			case len(f) == 3 && f[0] == "parent":
				parent, _ = strconv.Atoi(f[1])
				port, _ = strconv.Atoi(f[2])
			case len(f) == 2 && f[0] == "child":
				child, _ = strconv.Atoi(f[1])
			default:
				t.Fatalf("daemon said %q", f)
			}
		}
		if _, err := cmd.Process.Wait(); err != nil { // the parent's exit (the child keeps the pipes)
			t.Fatal(err)
		}
		if got := listenersOf(t, shmDir, parent); len(got) != 0 {
			t.Errorf("the exited parent's entries stay: %+v", got)
		}
		got := listenersOf(t, shmDir, child)
		want := discovery.Entry{Family: syscall.AF_INET, Local: netip.MustParseAddrPort("127.0.0.1:" + strconv.Itoa(port)),
			Stream: true, Lazy: true, PID: child, Inbox: fmt.Sprintf("goxio.%d.tcp.%d", os.Geteuid(), child)}
		if len(got) != 1 || got[0] != want {
			t.Errorf("the child's entries %+v, want [%+v]", got, want)
		}
	})

	// The environment does not tell (a parameters file turns the transport off): the entries
	// are written, and the engine withdraws them when it loads.
	t.Run("engine-off", func(t *testing.T) {
		shmDir := t.TempDir()
		file := filepath.Join(t.TempDir(), "goxio.toml")
		writeFile(t, file, []byte("GOXIO_SHM_TCP = false\n"), 0o644)
		e := testutil.Env(lib, "GOXIO_SHM=1", "GOXIO_SHM_DIR="+shmDir, "VMA_TRACELEVEL=WARN", "GOXIO_PARAMS_FILE="+file)
		var kept []string
		for _, kv := range e {
			if !strings.HasPrefix(kv, "GOXIO_SHM_TCP=") {
				kept = append(kept, kv)
			}
		}
		l := startLazyListeners(t, bin, kept)
		check(t, shmDir, l, true, "ABCDE")
		l.do("load")
		check(t, shmDir, l, true, "")
		l.do("exit")
	})
}

// TestLazyListenRedis: redis-server and redis-benchmark (50 connections) under shared-memory TCP.
// redis-server's first waits hold its listener alone, so it has no engine when the benchmark's
// clients connect: they find its listener published from C, pair, and the server's engine
// attaches at its first read. goxio_stats of the server shows the connections on shm with bytes
// through the rings. Then servers with shared-memory TCP off (by the environment, and by a
// parameters file the preload library cannot read) with clients on: the answers stay right and
// the clients do not wait for a peer that never attaches.
func TestLazyListenRedis(t *testing.T) {
	lib := integrationLib(t)
	server := testutil.Program(t, "redis-server", "redis-server")
	cli := testutil.Program(t, "redis-cli", "redis-tools")
	bench := testutil.Program(t, "redis-benchmark", "redis-tools")
	startRedis := func(t *testing.T, env []string) (*testutil.Proc, []string) {
		port := testutil.FreePort(t, "tcp")
		ps := strconv.Itoa(port)
		srv := testutil.Start(t, "redis-server", env, server, "--port", ps, "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", t.TempDir(), "--logfile", "")
		testutil.WaitBound(t, "tcp", port, 20*time.Second, srv)
		return srv, []string{"-h", "127.0.0.1", "-p", ps}
	}
	clientEnv := testutil.Env(lib, append(shmEnv, "VMA_TRACELEVEL=WARN")...)
	setGet := func(t *testing.T, base []string, value string) {
		t.Helper()
		start := time.Now()
		res := runClient(t, clientEnv, 20*time.Second, cli, append(base, "SET", "goxio:lazy", value)...)
		if got := strings.TrimSpace(string(res.Stdout)); got != "OK" {
			t.Fatalf("SET answered %q", got)
		}
		res = runClient(t, clientEnv, 20*time.Second, cli, append(base, "GET", "goxio:lazy")...)
		if got := strings.TrimSpace(string(res.Stdout)); got != value {
			t.Fatalf("GET answered %q, want %q", got, value)
		}
		t.Logf("SET and GET with redis-cli: %v", time.Since(start).Round(time.Millisecond))
	}

	t.Run("rings", func(t *testing.T) {
		srv, base := startRedis(t, testutil.Env(lib, shmEnv...))
		setGet(t, base, "rings")
		load := testutil.Start(t, "redis-benchmark", clientEnv, bench,
			append(base, "-t", "set,get", "-n", "100000", "-q")...)
		most := 0
		for !load.Exited() {
			if n := ringSockets(statsOf(t, srv.Cmd.Process.Pid)); n > most {
				most = n
			}
			time.Sleep(100 * time.Millisecond)
		}
		res := load.Wait(time.Second)
		rates := redisRate.FindAllStringSubmatch(string(res.Stdout), -1)
		if res.ExitCode != 0 || len(rates) != 2 {
			t.Fatalf("redis-benchmark: %s\n%s", res, res.Stdout)
		}
		t.Logf("%d of the benchmark's 50 connections through rings; %s %s, %s %s", most, rates[0][1], rates[0][2],
			rates[1][1], rates[1][2])
		if most < 40 {
			t.Errorf("goxio_stats of redis-server showed at most %d connections with bytes through rings, want the benchmark's 50", most)
		}
	})

	// Clients whose engine has shared-memory TCP off never pair, whatever the directory says.
	t.Run("client-off", func(t *testing.T) {
		srv, base := startRedis(t, testutil.Env(lib, shmEnv...))
		off := testutil.Env(lib, "GOXIO_SHM=1", "GOXIO_SHM_TCP=0", "VMA_TRACELEVEL=WARN")
		load := testutil.Start(t, "redis-benchmark", off, bench, append(base, "-t", "set,get", "-n", "20000", "-q")...)
		most := 0
		for !load.Exited() {
			most = max(most, ringSockets(statsOf(t, srv.Cmd.Process.Pid)))
			time.Sleep(100 * time.Millisecond)
		}
		if res := load.Wait(time.Second); res.ExitCode != 0 || len(redisRate.FindAllStringSubmatch(string(res.Stdout), -1)) != 2 {
			t.Fatalf("redis-benchmark: %s\n%s", res, res.Stdout)
		}
		if most != 0 {
			t.Errorf("%d connections through rings from clients whose shared-memory TCP is off", most)
		}
	})

	t.Run("server-off", func(t *testing.T) {
		_, base := startRedis(t, testutil.Env(lib, "GOXIO_SHM=1", "GOXIO_SHM_TCP=0"))
		setGet(t, base, "server-off")
		runClient(t, clientEnv, 60*time.Second, bench, append(base, "-t", "set,get", "-n", "5000", "-q")...)
	})

	t.Run("server-off-by-file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "goxio.toml")
		writeFile(t, file, []byte("GOXIO_SHM_TCP = false\n"), 0o644)
		srv, base := startRedis(t, testutil.Env(lib, "GOXIO_SHM=1", "GOXIO_PARAMS_FILE="+file))
		setGet(t, base, "server-off-by-file")
		start := time.Now()
		runClient(t, clientEnv, 60*time.Second, bench, append(base, "-t", "set,get", "-n", "5000", "-q")...)
		t.Logf("redis-benchmark -n 5000: %v", time.Since(start).Round(time.Millisecond))
		if n := ringSockets(statsOf(t, srv.Cmd.Process.Pid)); n != 0 {
			t.Errorf("%d connections through rings with a server whose shared-memory TCP is off", n)
		}
	})
}

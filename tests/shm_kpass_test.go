package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// Kernel-served sockets cost nothing (issue 17): calls on a socket whose path is the kernel for
// good go from the trampoline to libc, and sends to destinations without a goxio receiver skip
// the engine. tests/shm/kpass.c counts its thread's calls into the engine
// (goxio_thread_engine_calls) around its sends; the peers without goxio are this test's own
// sockets.

// kpassRun runs kpass under env and returns its "phase key=value" lines.
func kpassRun(t *testing.T, h *shmHarness, env []string, args ...string) map[string]int {
	t.Helper()
	return shmProgRun(t, "kpass", env, args...)
}

// shmProgRun compiles tests/shm/NAME.c (one of the programs that count their engine calls,
// progs.h), runs it under env with args, and returns its "phase key=value" lines as "phase key"
// -> value; a failed run fails the test.
func shmProgRun(t *testing.T, name string, env []string, args ...string) map[string]int {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "shm", name+".c"), bin, "-O2", "-Wall", "-ldl")
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	res := testutil.Run(cmd, 60*time.Second)
	if res.ExitCode != 0 {
		t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", name, args, res, res.Stdout, res.Stderr)
	}
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^(\w+) (\w+)=(-?\d+)$`).FindAllStringSubmatch(string(res.Stdout), -1) {
		n, _ := strconv.Atoi(m[3])
		out[m[1]+" "+m[2]] = n
	}
	t.Logf("%s %v: %v", name, args, out)
	return out
}

// kpassHold runs kpass under env with KPASS_HOLD, reads its statistics once it holds, and
// returns its "phase key=value" lines and the statistics' global block.
func kpassHold(t *testing.T, h *shmHarness, env []string, args ...string) (map[string]int, stats.GlobalSnapshot) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kpass")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "shm", "kpass.c"), bin, "-O2", "-Wall", "-ldl")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(env, "KPASS_HOLD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out := map[string]int{}
	line := regexp.MustCompile(`^(\w+) (\w+)=(-?\d+)$`)
	sc := bufio.NewScanner(stdout)
	held := false
	for sc.Scan() {
		if sc.Text() == "hold" {
			held = true
			break
		}
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[3])
			out[m[1]+" "+m[2]] = n
		} else {
			t.Errorf("kpass %v: %s", args, sc.Text())
		}
	}
	if !held {
		_ = cmd.Wait()
		t.Fatalf("kpass %v ended before it held:\n%s", args, stderr.String())
	}
	doc := h.stats(cmd.Process.Pid)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kpass %v: %v\n%s", args, err, stderr.String())
	}
	t.Logf("kpass %v: %v", args, out)
	if len(doc.Processes) == 0 {
		t.Fatalf("goxio_stats shows no process for kpass")
	}
	return out, doc.Processes[0].Global
}

// plainUDP is a UDP receiver without goxio on 127.0.0.1 that counts 64-byte datagrams.
func plainUDP(t *testing.T) (port int, got *atomic.Int64) {
	return plainUDPOn(t, "udp4", net.IPv4(127, 0, 0, 1))
}

// plainUDPOn is plainUDP on network (udp4, udp6) and address ip.
func plainUDPOn(t *testing.T, network string, ip net.IP) (port int, got *atomic.Int64) {
	t.Helper()
	c, err := net.ListenUDP(network, &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadBuffer(8 << 20)
	t.Cleanup(func() { c.Close() })
	got = new(atomic.Int64)
	go func() {
		buf := make([]byte, 256)
		for {
			n, _, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if n == 64 {
				got.Add(1)
			}
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port, got
}

// plainTCP is a TCP listener without goxio on 127.0.0.1: it reads 10 messages of 64 bytes from
// one connection and answers one byte, then reads the rest of want bytes and answers again; got
// counts what it read.
func plainTCP(t *testing.T, want int) (port int, got *atomic.Int64) {
	t.Helper()
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	got = new(atomic.Int64)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		n, _ := io.ReadFull(c, make([]byte, 640))
		_, _ = c.Write([]byte{'a'})
		m, _ := io.ReadFull(c, make([]byte, want-640))
		got.Store(int64(n + m))
		_, _ = c.Write([]byte{'b'})
		_, _ = io.Copy(io.Discard, c)
	}()
	return l.Addr().(*net.TCPAddr).Port, got
}

// TestShmKernelSendsSkipEngine: UDP sends to destinations without a goxio receiver (a receiver
// without goxio, a port nobody has; from an unconnected socket with sendto, from a connected one
// with send and write) go to the kernel without entering the engine, twice: in a process that
// never needed the engine, which then has none (shim/preload/lazy_ksend.c), and in one whose
// engine is loaded (the engine's shortcut, ksend.c; a destination new to it is looked up in the
// directory there too: "spread", 200 of them). Then a goxio socket binds the free port: the
// sends reach it through its ring, and after the first (warm-up) sends they skip the engine too
// (the trampoline appends to the ring itself, shim/preload/rsend.c); the sends made through the
// kernel are in the sending socket's statistics either way.
func TestShmKernelSendsSkipEngine(t *testing.T) {
	for _, loaded := range []bool{false, true} {
		t.Run(map[bool]string{false: "without-engine", true: "with-engine"}[loaded], func(t *testing.T) {
			h := newShmHarness(t)
			const n = 2000
			port, got := plainUDP(t)
			final := filepath.Join(t.TempDir(), "final")
			env := h.env("VMA_STATS_FILE=" + final)
			if loaded {
				env = append(env, "KPASS_LOAD=1")
			}
			out := kpassRun(t, h, env, "udp", strconv.Itoa(port), strconv.Itoa(n))
			if out["plain calls"] < 0 {
				t.Fatal("goxio_thread_engine_calls not found in the library")
			}
			if out["plain calls"] != 0 || out["connected calls"] != 0 || out["nobody calls"] != 0 || out["spread calls"] != 0 {
				t.Errorf("sends to destinations without a goxio receiver entered the engine: %v", out)
			}
			if want := map[bool]int{false: 0, true: 1}[loaded]; out["before loaded"] != want {
				t.Errorf("engine mapped after the sends to destinations without a goxio receiver: %d, want %d",
					out["before loaded"], want)
			}
			if out["goxio calls"] != 0 || out["goxio got"] != n+10 {
				t.Errorf("sends to a goxio receiver: %d engine calls, %d received; want 0 and %d", out["goxio calls"],
					out["goxio got"], n+10)
			}
			deadline := time.Now().Add(5 * time.Second)
			for got.Load() < 2*(n+10) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got.Load() != 2*(n+10) {
				t.Errorf("the receiver without goxio got %d datagrams, want %d", got.Load(), 2*(n+10))
			}
			b, err := os.ReadFile(final)
			if err != nil {
				t.Fatalf("VMA_STATS_FILE: %v", err)
			}
			want := fmt.Sprintf("Tx OS info: %d / %d / 0 / 0 [kilobytes/packets/eagains/errors]", 2*(n+10)*64/1024, 2*(n+10))
			if !strings.Contains(string(b), want) {
				t.Errorf("final statistics lack %q:\n%s", want, b)
			}
			// the ring sends, the trampoline's included, are the sending socket's offloaded ones
			if want := fmt.Sprintf("Tx Offload: %d / %d / 0 / 0 / 0", (n+10)*64/1024, n+10); !strings.Contains(string(b), want) {
				t.Errorf("final statistics lack %q:\n%s", want, b)
			}
			h.requireClean()
		})
	}
}

// TestShmKernelSendsSkipEngineIPv6: the same over IPv6 ([::1]), where the cache keys hash the
// address: an AF_INET6 sender's sendto and a connected one's send and write to a receiver without
// goxio make no engine call, and every datagram arrives.
func TestShmKernelSendsSkipEngineIPv6(t *testing.T) {
	h := newShmHarness(t)
	const n = 2000
	port, got := plainUDPOn(t, "udp6", net.IPv6loopback)
	out := kpassRun(t, h, h.env(), "udp6", strconv.Itoa(port), strconv.Itoa(n))
	if out["plain6 calls"] != 0 || out["connected6 calls"] != 0 || out["before6 loaded"] != 0 {
		t.Errorf("IPv6 sends to a receiver without goxio entered or loaded the engine: %v", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for got.Load() < 2*(n+10) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got.Load() != 2*(n+10) {
		t.Errorf("the receiver without goxio got %d datagrams, want %d", got.Load(), 2*(n+10))
	}
	h.requireClean()
}

// TestShmKernelForGoodTCP: a connection to a listener without goxio is the kernel's for good: in a
// process without the engine it is a plain socket from its connect on and loads none
// (shim/preload/lazy_ksend.c); in one whose engine is loaded it enters the engine only for its
// first writes. Every byte arrives either way.
func TestShmKernelForGoodTCP(t *testing.T) {
	for _, loaded := range []bool{false, true} {
		t.Run(map[bool]string{false: "without-engine", true: "with-engine"}[loaded], func(t *testing.T) {
			h := newShmHarness(t)
			const n = 2000
			port, got := plainTCP(t, (n+10)*64)
			env := h.tcpEnv()
			if loaded {
				env = append(env, "KPASS_LOAD=1")
			}
			out := kpassRun(t, h, env, "tcp", strconv.Itoa(port), strconv.Itoa(n))
			if out["tcp calls"] != 0 {
				t.Errorf("a connection to a listener without goxio entered the engine %d times after its first writes", out["tcp calls"])
			}
			if want := map[bool]int{false: 0, true: 1}[loaded]; out["tcp loaded"] != want {
				t.Errorf("engine mapped after a connection to a listener without goxio: %d, want %d", out["tcp loaded"], want)
			}
			if got.Load() != (n+10)*64 {
				t.Errorf("the listener without goxio read %d bytes, want %d", got.Load(), (n+10)*64)
			}
			h.requireClean()
		})
	}
}

// TestShmTCPChurnSkipsEngine: with the engine loaded, a TCP socket meets it only when it must
// (shim/preload/late.c): connections to a listener without goxio, once the engine found none there
// at a connect, are plain kernel connections from socket() on (blocking and non-blocking connects,
// fcntl and TCP_NODELAY before and after), and every answer arrives.
func TestShmTCPChurnSkipsEngine(t *testing.T) {
	h := newShmHarness(t)
	const n = 300
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var served atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 1)
			if _, err := io.ReadFull(c, b); err == nil && b[0] == 'c' {
				if _, err := c.Write([]byte{'C'}); err == nil {
					served.Add(1)
				}
			}
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	out, g := kpassHold(t, h, append(h.tcpEnv(), "KPASS_LOAD=1"), "tcpchurn", strconv.Itoa(port), strconv.Itoa(n))
	checkChurn(t, "tcpchurn", out, g, n, n+3, served.Load())
	h.requireClean()
}

// checkChurn checks a churn case of kpass.c (what): at least n sockets counted as kept on the
// kernel without the engine, none of them entering it, and want answers right on the client
// and from the server (peer).
func checkChurn(t *testing.T, what string, out map[string]int, g stats.GlobalSnapshot, n, want int, peer int64) {
	t.Helper()
	if g.KernelFromStart < uint64(n) {
		t.Errorf("%s: goxio_stats counts %d sockets kept on the kernel without the engine, want at least %d", what, g.KernelFromStart, n)
	}
	if out[what+" calls"] != 0 {
		t.Errorf("%s: %d sockets that talk with a peer without goxio entered the engine %d times", what, n, out[what+" calls"])
	}
	if out[what+" ok"] != want || peer != int64(want) {
		t.Errorf("%s: answers right: %d, from the peer: %d; want %d", what, out[what+" ok"], peer, want)
	}
}

// udpEcho is a UDP echo server without goxio on 127.0.0.1: it answers each datagram with prefix
// and the datagram, and returns its port and how many datagrams it answered.
func udpEcho(t *testing.T, prefix string) (int, *atomic.Int64) {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	echoed := new(atomic.Int64)
	go func() {
		buf := make([]byte, 64)
		for {
			k, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if _, err := c.WriteToUDP(append([]byte(prefix), buf[:k]...), from); err == nil {
				echoed.Add(1)
			}
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port, echoed
}

// TestShmUDPChurnSkipsEngine: with the engine loaded, a new UDP socket per request to a server
// without goxio (sendto or, as glibc's resolver does, connect and send) never enters the engine
// once the engine found no goxio socket at that address (shim/preload/late.c), and every echo
// arrives.
func TestShmUDPChurnSkipsEngine(t *testing.T) {
	h := newShmHarness(t)
	const n = 300
	port, echoed := udpEcho(t, "")
	out, g := kpassHold(t, h, h.env("KPASS_LOAD=1"), "udpchurn", strconv.Itoa(port), strconv.Itoa(n))
	checkChurn(t, "udpchurn", out, g, n, n+4, echoed.Load())
	h.requireClean()
}

// TestShmKernelForGoodTransportsOff: without ring transports every socket is the kernel's for good
// once its role is known; even the sends to a port a socket of the program is bound to skip the
// engine.
func TestShmKernelForGoodTransportsOff(t *testing.T) {
	h := newShmHarness(t)
	const n = 500
	port, _ := plainUDP(t)
	out := kpassRun(t, h, h.env("GOXIO_SHM=0", "GOXIO_SHM_TCP=0"), "udp", strconv.Itoa(port), strconv.Itoa(n))
	for _, k := range []string{"plain calls", "nobody calls", "goxio calls"} {
		if out[k] != 0 {
			t.Errorf("%s = %d, want 0 (no ring transport: the kernel's for good)", k, out[k])
		}
	}
	if out["goxio got"] != n+10 {
		t.Errorf("goxio got = %d, want %d", out["goxio got"], n+10)
	}
	tport, got := plainTCP(t, (n+10)*64)
	out = kpassRun(t, h, h.env("GOXIO_SHM=0", "GOXIO_SHM_TCP=0"), "tcp", strconv.Itoa(tport), strconv.Itoa(n))
	if out["tcp calls"] != 0 || got.Load() != (n+10)*64 {
		t.Errorf("tcp: %d engine calls, %d bytes read; want 0 and %d", out["tcp calls"], got.Load(), (n+10)*64)
	}
}

package tests

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// End to end: a C program under LD_PRELOAD=libgoxio.so receives exactly N
// UDP datagrams and N TCP messages; goxio_stats reports exactly N for both
// sockets in the text view and in --json, reads zero after -Z and then
// counts new traffic exactly; the segment disappears when the program exits.

// statsReceiverC receives on one UDP socket and one accepted TCP connection,
// acknowledging every message so that the sender never runs ahead: each
// datagram and each 100-byte message is exactly one receive call.
//
//	stdout: "ready UDPPORT TCPPORT", then "fds UDPFD TCPFD" after accept,
//	        "done" after each "recv K" order from stdin
//	stdin:  "recv K" (K datagrams and K TCP messages), "exit"
const statsReceiverC = `
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void die(const char *what) { perror(what); exit(2); }

int main(void) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	if (u < 0 || bind(u, (struct sockaddr *)&a, sizeof a) < 0) die("udp");
	if (getsockname(u, (struct sockaddr *)&a, &al) < 0) die("getsockname");
	int uport = ntohs(a.sin_port);
	a.sin_port = 0;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0) die("tcp listen");
	al = sizeof a;
	if (getsockname(l, (struct sockaddr *)&a, &al) < 0) die("getsockname");
	printf("ready %d %d\n", uport, ntohs(a.sin_port));
	int t = accept(l, NULL, NULL);
	if (t < 0) die("accept");
	printf("fds %d %d\n", u, t);
	char line[64], buf[256];
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "exit", 4) == 0) break;
		int k = atoi(line + 5);
		for (int i = 0; i < k; i++) {
			struct sockaddr_in from;
			socklen_t fl = sizeof from;
			ssize_t n = recvfrom(u, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
			if (n != 64) die("recvfrom");
			if (sendto(u, "a", 1, 0, (struct sockaddr *)&from, fl) != 1) die("sendto");
			n = recv(t, buf, 100, MSG_WAITALL);
			if (n != 100) die("recv");
			if (send(t, "a", 1, 0) != 1) die("send");
		}
		printf("done\n");
	}
	close(t);
	close(l);
	close(u);
	return 0;
}
`

// statsReceiver is the running C program and the test's ends of its
// sockets.
type statsReceiver struct {
	t            *testing.T
	cmd          *exec.Cmd
	stdin        io.WriteCloser
	lines        chan string
	out          *testutil.SyncBuffer
	udp          *net.UDPConn
	tcp          net.Conn
	udpFD, tcpFD int
}

func startStatsReceiver(t *testing.T, lib, dir string, env ...string) *statsReceiver {
	t.Helper()
	work := t.TempDir()
	src := filepath.Join(work, "receiver.c")
	if err := os.WriteFile(src, []byte(statsReceiverC), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "receiver")
	testutil.CompileC(t, src, bin, "-O1", "-Wall")

	cmd := exec.Command(bin)
	cmd.Env = testutil.Env(lib, append([]string{"VMA_STATS_SHMEM_DIR=" + dir, "GOXIO_STATS_SHMEM_DIR=" + dir}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &statsReceiver{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 100), out: &testutil.SyncBuffer{}}
	cmd.Stderr = r.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() {
			t.Logf("receiver stderr:\n%s", testutil.Tail(r.out.String(), 4000))
		}
	})
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	var uport, tport int
	if _, err := fmt.Sscanf(r.expect("ready"), "ready %d %d", &uport, &tport); err != nil {
		t.Fatalf("receiver start line: %v", err)
	}
	r.udp, err = net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: uport})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.udp.Close() })
	r.tcp, err = net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(tport), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.tcp.Close() })
	if _, err := fmt.Sscanf(r.expect("fds"), "fds %d %d", &r.udpFD, &r.tcpFD); err != nil {
		t.Fatalf("receiver fds line: %v", err)
	}
	return r
}

// expect waits for the receiver's next line, which must start with prefix.
func (r *statsReceiver) expect(prefix string) string {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("receiver ended while the test waited for %q", prefix)
		}
		if !strings.HasPrefix(l, prefix) {
			r.t.Fatalf("receiver said %q, want %q", l, prefix)
		}
		return l
	case <-time.After(60 * time.Second):
		r.t.Fatalf("receiver: no %q within 60s", prefix)
	}
	return ""
}

// exchange has the receiver take k datagrams and k TCP messages, one at a
// time with acknowledgements.
func (r *statsReceiver) exchange(k int) {
	r.t.Helper()
	fmt.Fprintf(r.stdin, "recv %d\n", k)
	dgram := bytes.Repeat([]byte{'d'}, 64)
	msg := bytes.Repeat([]byte{'m'}, 100)
	ack := make([]byte, 16)
	deadline := time.Now().Add(60 * time.Second)
	r.udp.SetDeadline(deadline)
	r.tcp.SetDeadline(deadline)
	for i := range k {
		if _, err := r.udp.Write(dgram); err != nil {
			r.t.Fatalf("datagram %d: %v", i, err)
		}
		if n, err := r.udp.Read(ack); err != nil || n != 1 {
			r.t.Fatalf("ack of datagram %d: %d %v", i, n, err)
		}
		if _, err := r.tcp.Write(msg); err != nil {
			r.t.Fatalf("message %d: %v", i, err)
		}
		if _, err := io.ReadFull(r.tcp, ack[:1]); err != nil {
			r.t.Fatalf("ack of message %d: %v", i, err)
		}
	}
	r.expect("done")
}

// rxTotals is offloaded plus kernel receive calls of one socket.
func rxTotals(t *testing.T, res toolResult, fd int) uint64 {
	t.Helper()
	a, b := textRx(t, res.stdout, fd)
	return a + b
}

func TestStatsE2EReceiveExactly(t *testing.T) {
	lib := testutil.Lib(t)
	dir := statsDir(t)
	final := filepath.Join(t.TempDir(), "final-stats.txt")
	r := startStatsReceiver(t, lib, dir, "VMA_STATS_FILE="+final)
	pid := strconv.Itoa(r.cmd.Process.Pid)
	const n = 500
	r.exchange(n)

	res := runStatsTool(t, "-k", dir, "-p", pid, "-c", "1")
	if res.code != 0 {
		t.Fatalf("goxio_stats: exit %d %s", res.code, res.stderr)
	}
	if got := rxTotals(t, res, r.udpFD); got != n {
		t.Errorf("text view: UDP fd %d received %d, want %d\n%s", r.udpFD, got, n, res.stdout)
	}
	// The TCP connection's peer (this test) has no goxio: the connection is on the kernel for
	// good and its calls go to libc without the engine (issue 17), so only what the engine saw
	// before that is counted; its transport and reason say so.
	if got := rxTotals(t, res, r.tcpFD); got > n {
		t.Errorf("text view: TCP fd %d received %d, more than the %d sent\n%s", r.tcpFD, got, n, res.stdout)
	}

	res = runStatsTool(t, "-k", dir, "-p", pid, "-c", "1", "--json")
	if res.code != 0 {
		t.Fatalf("goxio_stats --json: exit %d %s", res.code, res.stderr)
	}
	d := parseStatsDocs(t, res.stdout)[0]
	for _, fd := range []int{r.udpFD} {
		c := socketOf(t, d, r.cmd.Process.Pid, fd).Counters
		if rx := c.RxPackets + c.RxOSPackets; rx != n {
			t.Errorf("JSON: fd %d received %d, want %d (%+v)", fd, rx, n, c)
		}
		if tx := c.TxPackets + c.TxOSPackets; tx != n {
			t.Errorf("JSON: fd %d sent %d acks, want %d", fd, tx, n)
		}
	}
	udp := socketOf(t, d, r.cmd.Process.Pid, r.udpFD)
	if udp.Counters.RxBytes+udp.Counters.RxOSBytes != 64*n || udp.Proto() != "udp" || !udp.Local.IsValid() {
		t.Errorf("JSON UDP socket %+v", udp)
	}
	if tcp := socketOf(t, d, r.cmd.Process.Pid, r.tcpFD); tcp.Proto() != "tcp" || tcp.Transport != stats.TransportOS || tcp.Reason != stats.ReasonNoFasterPath {
		t.Errorf("JSON TCP socket to a peer without goxio, want transport os for good (no faster path): %+v", tcp)
	}

	// Zero, then count new traffic exactly.
	res = runStatsTool(t, "-k", dir, "-p", pid, "-Z", "-c", "1", "--json")
	if res.code != 0 {
		t.Fatalf("goxio_stats -Z: exit %d %s", res.code, res.stderr)
	}
	d = parseStatsDocs(t, res.stdout)[0]
	for _, fd := range []int{r.udpFD, r.tcpFD} {
		if c := socketOf(t, d, r.cmd.Process.Pid, fd).Counters; c.RxPackets+c.RxOSPackets+c.TxPackets+c.TxOSPackets != 0 {
			t.Errorf("after -Z fd %d reads %+v", fd, c)
		}
	}
	const m = 37
	r.exchange(m)
	res = runStatsTool(t, "-k", dir, "-p", pid, "-c", "1")
	for _, fd := range []int{r.udpFD} {
		if got := rxTotals(t, res, fd); got != m {
			t.Errorf("after -Z and %d more: fd %d reports %d\n%s", m, fd, got, res.stdout)
		}
	}

	// The netstat view lists both sockets with their transport.
	res = runStatsTool(t, "-k", dir, "-v", "5")
	if !strings.Contains(res.stdout, "/receiver") || !strings.Contains(res.stdout, "udp ") || !strings.Contains(res.stdout, "tcp ") {
		t.Errorf("view 5:\n%s", res.stdout)
	}

	// A clean exit removes the segment.
	path := filepath.Join(dir, "goxiostat."+pid)
	fmt.Fprintln(r.stdin, "exit")
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("receiver exit: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("receiver did not exit")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("segment %s still there after a clean exit: %v", path, err)
	}
	// VMA_STATS_FILE got each socket's final counters at close (counted
	// since the -Z: m receive calls each).
	b, err := os.ReadFile(final)
	if err != nil {
		t.Fatalf("VMA_STATS_FILE: %v", err)
	}
	for _, fd := range []int{r.udpFD, r.tcpFD} {
		if !strings.Contains(string(b), "Fd=["+strconv.Itoa(fd)+"]") {
			t.Errorf("VMA_STATS_FILE lacks fd %d:\n%s", fd, b)
		}
	}
	if !strings.Contains(string(b), " / "+strconv.Itoa(m)+" / 0 / 0 [kilobytes/packets/eagains/errors]") {
		t.Errorf("VMA_STATS_FILE lacks a receive line with %d packets:\n%s", m, b)
	}
}

// TestStatsE2ECommandsAndKill sends goxio_stats commands to a process under
// the library (log level, fd dump through its logger), then kills it with
// SIGKILL: the next goxio_stats run removes the segment it left.
func TestStatsE2ECommandsAndKill(t *testing.T) {
	lib := testutil.Lib(t)
	dir := statsDir(t)
	r := startStatsReceiver(t, lib, dir)
	pid := strconv.Itoa(r.cmd.Process.Pid)
	r.exchange(3)

	res := runStatsTool(t, "-k", dir, "-p", pid, "-l", "debug", "-c", "1")
	if res.code != 0 || !strings.Contains(res.stderr, "log level set to debug") {
		t.Errorf("-l debug: exit %d stderr %q", res.code, res.stderr)
	}
	res = runStatsTool(t, "-k", dir, "-p", pid, "-S", strconv.Itoa(r.udpFD), "info")
	if res.code != 0 {
		t.Errorf("-S %d info: exit %d stderr %q", r.udpFD, res.code, res.stderr)
	}
	// The dump goes to the process's log (stderr).
	want := "fd=" + strconv.Itoa(r.udpFD)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(r.out.String(), want) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(r.out.String(), want) {
		t.Errorf("the fd dump did not reach the process's log (no %q)", want)
	}

	path := filepath.Join(dir, "goxiostat."+pid)
	syscall.Kill(r.cmd.Process.Pid, syscall.SIGKILL)
	r.cmd.Wait()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a killed process left no segment: %v", err)
	}
	res = runStatsTool(t, "-k", dir, "-c", "1")
	if res.code != 1 || !strings.Contains(res.stderr, "removed "+path) || !strings.Contains(res.stderr, "no goxio process found") {
		t.Errorf("after SIGKILL: exit %d stderr %q", res.code, res.stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("stale segment not removed: %v", err)
	}
}

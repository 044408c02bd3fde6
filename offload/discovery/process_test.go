package discovery

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goxio/goxio/internal/procstat"
)

// The tests re-execute their own binary as a second goxio process: with
// GOXIO_DISCOVERY_CHILD set, TestMain runs runChild instead of the tests.
const (
	envChild = "GOXIO_DISCOVERY_CHILD" // publish | publish-all
	envDir   = "GOXIO_DISCOVERY_DIR"   // folder of the segment
	envPorts = "GOXIO_DISCOVERY_PORTS" // comma-separated ports to publish
	envPeer  = "GOXIO_DISCOVERY_PEER"  // a port the parent published, to look up
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// runChild opens the segment, publishes 127.0.0.1:<port> for every port
// (inbox "child<port>"), reports "ready <pid>" and, when asked, what it
// found for the parent's port, then waits for stdin to close and withdraws
// its entries before exiting.
func runChild() int {
	d, err := Open(os.Getenv(envDir), unix.Geteuid(), testNetNS)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	var hs []Handle
	for _, p := range strings.Split(os.Getenv(envPorts), ",") {
		port, _ := strconv.Atoi(p)
		h, err := d.Publish(v4("child"+p, "127.0.0.1:"+strconv.Itoa(port)))
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		hs = append(hs, h)
	}
	fmt.Println("ready", os.Getpid())
	if p := os.Getenv(envPeer); p != "" {
		got := d.Lookup(ap("127.0.0.1:"+p), ap("127.0.0.1:1"), nil)
		if len(got) == 1 {
			fmt.Println("found", got[0].Inbox, got[0].PID)
		} else {
			fmt.Println("found none", len(got))
		}
	}
	io.Copy(io.Discard, os.Stdin)
	for _, h := range hs {
		h.Withdraw()
	}
	if err := d.Close(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	return 0
}

// child is a running second process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	pid   int
}

// startChild starts the test binary as a child publishing ports, and waits
// (bounded) for its "ready".
func startChild(t *testing.T, dir string, ports []int, peer int) *child {
	t.Helper()
	var ps []string
	for _, p := range ports {
		ps = append(ps, strconv.Itoa(p))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=publish", envDir+"="+dir, envPorts+"="+strings.Join(ps, ","))
	if peer != 0 {
		cmd.Env = append(cmd.Env, envPeer+"="+strconv.Itoa(peer))
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(out)}
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	line := c.line(t)
	if _, err := fmt.Sscanf(line, "ready %d", &c.pid); err != nil {
		t.Fatalf("child said %q, want ready", line)
	}
	return c
}

// line reads the child's next output line within 20 s.
func (c *child) line(t *testing.T) string {
	t.Helper()
	done := make(chan bool, 1)
	go func() { done <- c.lines.Scan() }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatalf("child output ended: %v", c.lines.Err())
		}
		return c.lines.Text()
	case <-time.After(20 * time.Second):
		t.Fatal("child did not answer within 20 s")
	}
	return ""
}

// TestTwoProcesses: two processes publish into one segment and find each
// other; the child's withdrawal is seen by the parent with a new generation.
func TestTwoProcesses(t *testing.T) {
	d, dir := openTest(t)
	mustPublish(t, d, v4("parent", "127.0.0.1:4100"))
	c := startChild(t, dir, []int{4101}, 4100)
	if got, want := c.line(t), fmt.Sprintf("found parent %d", os.Getpid()); got != want {
		t.Errorf("child's lookup: %q, want %q", got, want)
	}
	got := d.Lookup(ap("127.0.0.1:4101"), ap("127.0.0.1:1"), nil)
	if len(got) != 1 || got[0].Inbox != "child4101" || got[0].PID != c.pid {
		t.Fatalf("parent's lookup of the child: %+v (child pid %d)", got, c.pid)
	}
	gen := d.Gen()
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if d.Gen() == gen {
		t.Error("generation unchanged after the child withdrew")
	}
	if got := d.Lookup(ap("127.0.0.1:4101"), ap("127.0.0.1:1"), nil); len(got) != 0 {
		t.Errorf("withdrawn entry still found: %+v", got)
	}
}

// TestConcurrentCreate: several processes open a segment that does not
// exist yet at the same time; all end up in the same table.
func TestConcurrentCreate(t *testing.T) {
	dir := t.TempDir()
	const n = 4
	var cs []*child
	for i := 0; i < n; i++ {
		cs = append(cs, startChild(t, dir, []int{4200 + i}, 0))
	}
	d, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i, c := range cs {
		got := d.Lookup(ap(fmt.Sprintf("127.0.0.1:%d", 4200+i)), ap("127.0.0.1:1"), nil)
		if len(got) != 1 || got[0].PID != c.pid {
			t.Errorf("child %d (pid %d): %+v", i, c.pid, got)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != FileName(unix.Geteuid(), testNetNS) {
		t.Errorf("files in the folder: %v", ents)
	}
	for _, c := range cs {
		c.stdin.Close()
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v", c.pid, err)
		}
	}
}

// TestKilledOwnerSwept: the entries of a SIGKILLed process are skipped by
// Lookup (which sweeps what it would have returned) and removed by Sweep.
func TestKilledOwnerSwept(t *testing.T) {
	d, dir := openTest(t)
	c := startChild(t, dir, []int{4300, 4301, 4302}, 0)
	if got := d.Lookup(ap("127.0.0.1:4300"), ap("127.0.0.1:1"), nil); len(got) != 1 || got[0].PID != c.pid {
		t.Fatalf("child's entry before the kill: %+v", got)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	// A kill(2) that found the process stands for procstat.KillTTL (the look-ups of a socket
	// per request): the death shows after it.
	time.Sleep(2 * procstat.KillTTL)
	gen := d.Gen()
	if got := d.Lookup(ap("127.0.0.1:4300"), ap("127.0.0.1:1"), nil); len(got) != 0 {
		t.Fatalf("dead process's entry returned: %+v", got)
	}
	if d.Gen() == gen {
		t.Error("Lookup skipped a dead entry without sweeping it")
	}
	if n := d.Sweep(); n != 2 {
		t.Errorf("Sweep removed %d, want the 2 left", n)
	}
	if n := d.Sweep(); n != 0 {
		t.Errorf("second Sweep removed %d", n)
	}
}

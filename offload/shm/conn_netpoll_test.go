package shm

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const netpollEnv = "GOXIO_SHM_TEST_NETPOLL" // "<dir>" in the re-executed test binary

// netpollerStarted reports whether the process has an epoll fd: the Go netpoller's, started by
// the first runtime timer (time.Sleep, time.AfterFunc, ...) or os.File of a pollable kind.
func netpollerStarted() bool {
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, "eventpoll") {
			return true
		}
	}
	return false
}

// TestHelperOpenConnNetpoll is the re-executed process of TestOpenConnStartsNoNetpoller: exit 0
// when creating and attaching a connection left the netpoller unstarted, 5 when it started it,
// 6 when it ran before (the check cannot judge), 3 on an error.
func TestHelperOpenConnNetpoll(t *testing.T) {
	dir := os.Getenv(netpollEnv)
	if dir == "" {
		return
	}
	if netpollerStarted() {
		os.Exit(6)
	}
	a, err := OpenConn(connCfg(dir, testA, testB, 65536, 65536))
	if err != nil {
		os.Exit(3)
	}
	b, err := OpenConn(connCfg(dir, testB, testA, 65536, 65536))
	if err != nil {
		os.Exit(3)
	}
	started := netpollerStarted()
	_, _ = b.Close()
	_, _ = a.Close()
	if started {
		os.Exit(5)
	}
	os.Exit(0)
}

// TestOpenConnStartsNoNetpoller: the library runs on the program's threads and must not start
// the Go netpoller (epoll_create1, eventfd2 and a thread waiting in epoll_pwait inside the
// program); crypto/rand's first use did, through the runtime timer of its entropy warning.
func TestOpenConnStartsNoNetpoller(t *testing.T) {
	dir := testDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpenConnNetpoll$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), netpollEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run helper: %v", err)
	}
	switch code {
	case 0:
	case 5:
		t.Fatalf("OpenConn started the Go netpoller")
	case 6:
		t.Fatalf("the netpoller ran before OpenConn: the check cannot judge\n%s", out)
	default:
		t.Fatalf("helper exit %d\n%s", code, out)
	}
}

package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
	"github.com/goxio/goxio/tests/internal/testutil"
)

// Helpers of the stats tests: a test program that publishes with the stats
// writer directly (tests/stats_testprog), and goxio_stats runs.

// statsTestProg builds tests/stats_testprog into the test's temporary
// folder (the go build cache makes every build after the first a link).
func statsTestProg(t *testing.T) string {
	t.Helper()
	// `go test` puts its own go command first in PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("build stats_testprog: no go command in PATH: %v", err)
	}
	out := filepath.Join(t.TempDir(), "stats_testprog")
	cmd := exec.Command(goBin, "build", "-o", out, "./tests/stats_testprog")
	cmd.Dir = testutil.RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build stats_testprog: %v\n%s", err, b)
	}
	return out
}

// statsProg is a running test program.
type statsProg struct {
	t     *testing.T
	cmd   *exec.Cmd
	pid   int
	stdin io.WriteCloser
	lines chan string
	mu    sync.Mutex
	seen  []string // every line printed
	done  chan struct{}
}

// startStatsProg starts the test program publishing into dir.
func startStatsProg(t *testing.T, dir string, args ...string) *statsProg {
	t.Helper()
	cmd := exec.Command(statsTestProg(t), append([]string{"-dir", dir}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &statsProg{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 1000), done: make(chan struct{})}
	// One goroutine reads to EOF and only then reaps: cmd.Wait closes the
	// stdout pipe, so reaping first could drop the last lines (an "ok"
	// printed just before exit).
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.seen = append(p.seen, sc.Text())
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
		close(p.lines)
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	first := p.expect("ready ")
	p.pid, _ = strconv.Atoi(strings.TrimPrefix(first, "ready "))
	if p.pid != cmd.Process.Pid {
		t.Fatalf("test program says pid %q, started %d", first, cmd.Process.Pid)
	}
	return p
}

// expect waits up to 60s for a line starting with prefix (other lines are
// kept in seen).
func (p *statsProg) expect(prefix string) string {
	p.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.t.Fatalf("test program ended while waiting for %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timeout:
			p.t.Fatalf("test program: no %q within 60s", prefix)
		}
	}
}

// do sends one order and waits for its "ok".
func (p *statsProg) do(format string, args ...any) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.stdin, format+"\n", args...); err != nil {
		p.t.Fatalf("test program: %v", err)
	}
	p.expect("ok")
}

// saw reports whether the program printed line.
func (p *statsProg) saw(line string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.seen {
		if l == line {
			return true
		}
	}
	return false
}

// kill ends the program with SIGKILL and reaps it.
func (p *statsProg) kill() {
	p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// wait waits for the program to exit.
func (p *statsProg) wait() {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Fatal("test program did not exit")
	}
}

// statsTool returns the goxio_stats binary under test.
func statsTool(t *testing.T) string {
	t.Helper()
	return testutil.Tool(t, "goxio_stats")
}

// toolResult is one goxio_stats run.
type toolResult struct {
	stdout, stderr string
	code           int
}

// runStatsTool runs goxio_stats with args (bounded to 60s).
func runStatsTool(t *testing.T, args ...string) toolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, statsTool(t), args...)
	cmd.Env = statsToolEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := toolResult{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("goxio_stats %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("goxio_stats %v did not finish in 60s", args)
	}
	return res
}

// statsToolEnv is the environment without stats directory overrides, so
// -k decides.
func statsToolEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "VMA_STATS_SHMEM_DIR=") || strings.HasPrefix(e, "GOXIO_STATS_SHMEM_DIR=") {
			continue
		}
		env = append(env, e)
	}
	return env
}

// statsDoc is the part of a --json document the tests read.
type statsDoc struct {
	Details   string            `json:"details"`
	Processes []*stats.Snapshot `json:"processes"`
}

// parseStatsDocs parses one JSON document per line.
func parseStatsDocs(t *testing.T, out string) []statsDoc {
	t.Helper()
	var docs []statsDoc
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var d statsDoc
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("goxio_stats --json printed invalid JSON (%v): %.300s", err, l)
		}
		docs = append(docs, d)
	}
	return docs
}

// socketOf returns the socket with fd in a document's process pid.
func socketOf(t *testing.T, d statsDoc, pid, fd int) stats.SocketSnapshot {
	t.Helper()
	for _, p := range d.Processes {
		if p.Process.Pid != pid {
			continue
		}
		for _, s := range p.Sockets {
			if s.FD == fd {
				return s
			}
		}
	}
	t.Fatalf("no fd %d of pid %d in the JSON document", fd, pid)
	return stats.SocketSnapshot{}
}

// textRx returns the offloaded and os rx packet columns of fd's "Rx:" line
// in a view 1 or 2 text report.
func textRx(t *testing.T, out string, fd int) (offloaded, os uint64) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^ ` + strconv.Itoa(fd) + `\s+Rx:\s+(\d+)\s+\d+\s+\d+\s+\d+\s+[\d.]+\s+(\d+)`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no Rx line for fd %d in:\n%s", fd, out)
	}
	a, _ := strconv.ParseUint(m[1], 10, 64)
	b, _ := strconv.ParseUint(m[2], 10, 64)
	return a, b
}

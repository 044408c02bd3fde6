package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// LibEnvVar names an optional variable of the test process: space-separated KEY=value settings added
// to every program started with the library (for example "VMA_SPEC=latency VMA_RX_POLL=1000"), so
// the suites can be run under other parameters. It is not passed on to the programs itself.
const LibEnvVar = "GOXIO_TEST_LIB_ENV"

// Env returns the test process's environment without any LD_PRELOAD, then, when lib is not empty,
// LD_PRELOAD=lib and the settings of $GOXIO_TEST_LIB_ENV, then extra ("KEY=value" entries, later ones
// win).
func Env(lib string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LD_PRELOAD=") || strings.HasPrefix(kv, LibEnvVar+"=") {
			continue
		}
		env = append(env, kv)
	}
	if lib != "" {
		env = append(env, "LD_PRELOAD="+lib)
		env = append(env, strings.Fields(os.Getenv(LibEnvVar))...)
	}
	return append(env, extra...)
}

// Result is the outcome of one bounded run of a program.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int           // -1 when the program did not exit normally (signal, timeout, start failure)
	Signal   string        // name of the signal that ended the program, if one did
	TimedOut bool          // the time bound expired and the process group was killed
	Elapsed  time.Duration // wall time from start to exit
	Err      error         // start failure or the error from Wait
}

// String summarises the result for failure messages.
func (r Result) String() string {
	switch {
	case r.TimedOut:
		return fmt.Sprintf("timed out after %v (killed)", r.Elapsed.Round(time.Millisecond))
	case r.Signal != "":
		return "killed by signal " + r.Signal
	case r.ExitCode < 0:
		return fmt.Sprintf("did not run: %v", r.Err)
	default:
		return fmt.Sprintf("exit code %d", r.ExitCode)
	}
}

// Run runs cmd in its own process group, bounded by timeout: on expiry the whole group gets SIGKILL.
// cmd must not have been started and must not have Stdout/Stderr set; Run collects both.
func Run(cmd *exec.Cmd, timeout time.Duration) Result {
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	setGroup(cmd)
	// A grandchild that keeps stdout open must not keep Wait waiting for ever.
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{ExitCode: -1, Err: fmt.Errorf("start %s: %w", cmd.Path, err)}
	}
	timedOut := false
	timer := time.AfterFunc(timeout, func() {
		timedOut = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	err := cmd.Wait()
	stopped := timer.Stop()
	// Leftovers of the group (children the program did not reap) do not outlive the run.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Elapsed: time.Since(start), Err: err}
	res.TimedOut = timedOut && !stopped
	res.ExitCode, res.Signal = exitStatus(cmd, err)
	return res
}

func setGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

func exitStatus(cmd *exec.Cmd, err error) (int, string) {
	if cmd.ProcessState == nil {
		return -1, ""
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return -1, ""
	}
	return cmd.ProcessState.ExitCode(), ""
}

// SyncBuffer is a bytes.Buffer safe for one writer and concurrent readers (a program's output
// read by the test while the program runs).
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Proc is a program running in the background for the length of a test (a server, usually).
type Proc struct {
	Name   string
	Cmd    *exec.Cmd
	out    SyncBuffer // stdout and stderr as they came
	stdout SyncBuffer
	stderr SyncBuffer
	done   chan struct{}
	err    error
}

// teeWriter writes to two writers (the combined log and one stream).
type teeWriter struct{ a, b *SyncBuffer }

func (w teeWriter) Write(p []byte) (int, error) {
	_, _ = w.a.Write(p)
	return w.b.Write(p)
}

// Start starts a background program with the given environment in its own process group, its stdout
// and stderr collected (separately, and together for logs). The test's Cleanup stops it (SIGTERM, then SIGKILL of the group) and
// logs its output when the test failed.
func Start(t testing.TB, name string, env []string, path string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = env
	p := &Proc{Name: name, Cmd: cmd, done: make(chan struct{})}
	cmd.Stdout = teeWriter{&p.out, &p.stdout}
	cmd.Stderr = teeWriter{&p.out, &p.stderr}
	cmd.WaitDelay = 2 * time.Second
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s (%s): %v", name, path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop(3 * time.Second)
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, Tail(p.Output(), 4000))
		}
	})
	return p
}

// Output returns everything the program wrote so far, stdout and stderr interleaved.
func (p *Proc) Output() string { return p.out.String() }

// Stdout returns what the program wrote to stdout so far.
func (p *Proc) Stdout() string { return p.stdout.String() }

// Exited reports whether the program has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to timeout for the program to end by itself; on expiry it kills the group and
// reports TimedOut.
func (p *Proc) Wait(timeout time.Duration) Result {
	timedOut := false
	select {
	case <-p.done:
	case <-time.After(timeout):
		timedOut = true
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	res := Result{Stdout: []byte(p.stdout.String()), Stderr: []byte(p.stderr.String()), TimedOut: timedOut, Err: p.err}
	res.ExitCode, res.Signal = exitStatus(p.Cmd, p.err)
	return res
}

// Stop ends the program: SIGTERM to its process group, SIGKILL after grace. It returns at once when
// the program has already ended.
func (p *Proc) Stop(grace time.Duration) {
	if p.Exited() {
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		return
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// RunProgram runs a program (a client, usually) to completion with env under a time bound and returns
// its Result; it fails nothing itself.
func RunProgram(env []string, timeout time.Duration, path string, args ...string) Result {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	return Run(cmd, timeout)
}

// Tail returns at most n bytes from the end of s.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// Command returns an exec.Cmd for path with env, ready for Run (stdin may still be set).
func Command(env []string, path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	return cmd
}

// Children returns the pids of the direct children of process pid (from /proc/<pid>/task/*/children).
func Children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

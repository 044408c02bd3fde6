package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// processCalls matches the system calls that make a process (not a thread) in strace's output.
var processCalls = regexp.MustCompile(`(?m)^(?:\[pid +\d+\] |\d+ +)?(vfork|fork|clone3?)\((.*)$`)

// creations runs a program under strace -f with the given environment and returns, in order, one
// word per process it made: "vfork" for a vfork or a clone with CLONE_VM|CLONE_VFORK, "fork" for
// anything else that makes a process. Threads (CLONE_THREAD) are left out.
func creations(t *testing.T, env []string, path string, args ...string) []string {
	t.Helper()
	strace := testutil.Program(t, "strace", "strace")
	out := filepath.Join(t.TempDir(), "strace.out")
	sargs := append([]string{"-f", "-qq", "-e", "trace=vfork,fork,clone,clone3", "-o", out, path}, args...)
	res := testutil.RunProgram(env, time.Minute, strace, sargs...)
	if res.ExitCode != 0 {
		t.Fatalf("strace %s: %s\nstdout:\n%s\nstderr:\n%s", strings.Join(sargs, " "), res,
			testutil.Tail(string(res.Stdout), 3000), testutil.Tail(string(res.Stderr), 3000))
	}
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("read strace output: %v", err)
	}
	var kinds []string
	for _, m := range processCalls.FindAllStringSubmatch(string(text), -1) {
		call, rest := m[1], m[2]
		switch {
		case strings.Contains(rest, "CLONE_THREAD"):
			continue
		case call == "vfork" || (strings.Contains(rest, "CLONE_VM") && strings.Contains(rest, "CLONE_VFORK")):
			kinds = append(kinds, "vfork")
		default:
			kinds = append(kinds, "fork")
		}
	}
	return kinds
}

// TestVforkStaysVfork: a vfork under the library is a vfork system call (the child borrows the
// parent's memory: no page tables copied), with the engine loaded or not. dash runs external
// commands with vfork; tests/semantic/vfork.c vforks before and after its sockets moved data (the
// engine loaded) and execs once. Same process-making calls with and without the library.
func TestVforkStaysVfork(t *testing.T) {
	lib := integrationLib(t)
	sh := testutil.Program(t, "dash", "dash")
	bin := filepath.Join(t.TempDir(), "vfork")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "semantic", "vfork.c"), bin,
		"-O1", "-D_GNU_SOURCE")
	for _, c := range []struct {
		name string
		path string
		args []string
		want []string
	}{
		{"dash", sh, []string{"-c", "/bin/true; /bin/true; echo x >/dev/null"}, []string{"vfork", "vfork"}},
		{"semantic vfork", bin, nil, []string{"vfork", "vfork", "vfork"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			without := creations(t, testutil.Env(""), c.path, c.args...)
			with := creations(t, testutil.Env(lib), c.path, c.args...)
			if strings.Join(without, " ") != strings.Join(c.want, " ") {
				t.Fatalf("without the library: %v, want %v (a test problem)", without, c.want)
			}
			if strings.Join(with, " ") != strings.Join(without, " ") {
				t.Errorf("with the library: %v, without: %v", with, without)
			}
		})
	}
}

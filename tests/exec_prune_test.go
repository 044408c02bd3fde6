package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// execProgs compiles three programs that print the LD_PRELOAD they were started with: one that
// imports nothing that could lead to a socket ("plain"), one that imports socket ("sock") and one
// that imports execvp ("spawner"); each calls its import only when given an argument it never is.
func execProgs(t *testing.T) (plain, sock, spawner string) {
	t.Helper()
	dir := t.TempDir()
	build := func(name, decl, call string) string {
		src := filepath.Join(dir, name+".c")
		text := fmt.Sprintf(`#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
%s
int main(int argc, char **argv) {
	const char *p = getenv("LD_PRELOAD");
	if (argc > 3)
		%s;
	printf("%s LD_PRELOAD=%%s\n", p ? p : "(unset)");
	return 0;
}
`, decl, call, name)
		if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, name)
		testutil.CompileC(t, src, bin, "-O1")
		return bin
	}
	plain = build("plain", "", "puts(argv[1])")
	sock = build("sock", "#include <sys/socket.h>", "return socket(AF_INET, SOCK_DGRAM, 0)")
	spawner = build("spawner", "", "execvp(argv[1], argv + 1)")
	return plain, sock, spawner
}

// TestExecPrune: a program started by a process under the library (dash: vfork, bash: fork,
// Python: its subprocess module) starts without the library when none of its objects imports a
// socket, exec, dlopen or syscall function and it inherits no inet socket, and with it otherwise;
// without goxio, the same programs print what they print without the library in the first case.
func TestExecPrune(t *testing.T) {
	lib := integrationLib(t)
	plain, sock, spawner := execProgs(t)
	dash := testutil.Program(t, "dash", "dash")
	bash := testutil.Program(t, "bash", "bash")
	py := testutil.Python(t)
	unset, with := "LD_PRELOAD=(unset)", "LD_PRELOAD="+lib
	script := filepath.Join(t.TempDir(), "s.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"script LD_PRELOAD=$LD_PRELOAD\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Python hands the child a UDP socket as its stdin or at fd 100 (inherited), or none.
	pyInherit := `import os, socket, subprocess, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
s.sendto(b"x", s.getsockname())  # the socket moved data: the engine is loaded
if sys.argv[2] == "high":
    os.dup2(s.fileno(), 100)
    subprocess.run([sys.argv[1]], pass_fds=(100,), stdin=subprocess.DEVNULL, check=True)
else:
    subprocess.run([sys.argv[1]], stdin=s.fileno() if sys.argv[2] == "sock" else subprocess.DEVNULL, check=True)
`
	for _, c := range []struct {
		name  string
		extra []string
		path  string
		args  []string
		want  []string // lines of stdout, in order
	}{
		{"dash plain twice", nil, dash, []string{"-c", plain + "; " + plain}, []string{"plain " + unset, "plain " + unset}},
		{"bash plain", nil, bash, []string{"-c", plain + "; true"}, []string{"plain " + unset}},
		{"dash socket program", nil, dash, []string{"-c", sock}, []string{"sock " + with}},
		{"dash spawner", nil, dash, []string{"-c", spawner}, []string{"spawner " + with}},
		{"dash script", nil, dash, []string{"-c", script}, []string{"script " + with}},
		{"GOXIO_PRELOAD_ALL", []string{"GOXIO_PRELOAD_ALL=1"}, dash, []string{"-c", plain}, []string{"plain " + with}},
		{"LD_LIBRARY_PATH", []string{"LD_LIBRARY_PATH=/nonexistent"}, dash, []string{"-c", plain}, []string{"plain " + with}},
		{"python plain", nil, py, []string{"-c", pyInherit, plain, "none"}, []string{"plain " + unset}},
		{"python inherited inet socket", nil, py, []string{"-c", pyInherit, plain, "sock"}, []string{"plain " + with}},
		{"python inherited inet socket at fd 100", nil, py, []string{"-c", pyInherit, plain, "high"}, []string{"plain " + with}},
		{"socket program then plain", nil, dash, []string{"-c", sock + "; " + plain}, []string{"sock " + with, "plain " + unset}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := testutil.RunProgram(testutil.Env(lib, c.extra...), time.Minute, c.path, c.args...)
			got := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
			if res.ExitCode != 0 || strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("%s: %s\nstdout:\n%s\nstderr:\n%s\nwant:\n%s", c.name, res, res.Stdout,
					testutil.Tail(string(res.Stderr), 2000), strings.Join(c.want, "\n"))
			}
		})
	}
	// What a user sees with VMA_TRACELEVEL=DEBUG: each decision and its reason.
	res := testutil.RunProgram(testutil.Env(lib, "VMA_TRACELEVEL=DEBUG"), time.Minute, dash, "-c", plain+"; "+sock)
	for _, w := range []string{"goxio: exec " + plain + ": without the library", "goxio: exec " + sock + ": with the library (" + sock + ": socket)"} {
		if !strings.Contains(string(res.Stderr), w) {
			t.Errorf("trace: stderr lacks %q:\n%s", w, res.Stderr)
		}
	}
	// Without goxio: the pruned program sees what it sees with no library at all.
	res = testutil.RunProgram(testutil.Env(""), time.Minute, dash, "-c", plain)
	if got := strings.TrimSpace(string(res.Stdout)); got != "plain "+unset {
		t.Errorf("without the library: %q", got)
	}
}

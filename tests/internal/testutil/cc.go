package testutil

import (
	"os/exec"
	"testing"
	"time"
)

// CompileC compiles one C source file into the executable out with gcc and the given flags (plus
// -pthread). It fails the test with gcc's messages when compilation fails.
func CompileC(t testing.TB, src, out string, flags ...string) {
	t.Helper()
	gcc := Program(t, "gcc", "gcc")
	args := append([]string{}, flags...)
	args = append(args, "-pthread", "-o", out, src)
	res := Run(exec.Command(gcc, args...), 2*time.Minute)
	if res.ExitCode != 0 {
		t.Fatalf("gcc %v: %s\n%s%s", args, res, res.Stdout, res.Stderr)
	}
}

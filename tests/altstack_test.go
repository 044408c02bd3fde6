package tests

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestAltStackDisabled runs tests/semantic/altstack.c with and without the library: a thread
// whose alternate signal stack the Go runtime took at its first call into the engine disables it
// (CPython's faulthandler at exit), then makes socket calls while SIGURG and SIGUSR1 arrive. The
// runtime must never be left without a signal stack (it aborted: "non-Go code disabled
// sigaltstack"), and the program must see its stack as it set it.
func TestAltStackDisabled(t *testing.T) {
	lib := integrationLib(t)
	bin := filepath.Join(t.TempDir(), "altstack")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "semantic", "altstack.c"), bin, "-O1", "-Wall", "-pthread")
	kernel := testutil.RunProgram(testutil.Env(""), 60*time.Second, bin)
	if kernel.ExitCode != 0 {
		t.Fatalf("without the library: %v\n%s%s", kernel, kernel.Stdout, kernel.Stderr)
	}
	for _, env := range [][]string{testutil.Env(lib), testutil.Env(lib, "GOXIO_SHM=0", "GOXIO_SHM_TCP=0")} {
		goxio := testutil.RunProgram(env, 60*time.Second, bin)
		if goxio.ExitCode != 0 {
			t.Fatalf("under the library: %v\n%s\n%s", goxio, goxio.Stdout, testutil.Tail(string(goxio.Stderr), 3000))
		}
		if string(goxio.Stdout) != string(kernel.Stdout) {
			t.Errorf("output under the library:\n%s\nwithout it:\n%s", goxio.Stdout, kernel.Stdout)
		}
	}
}

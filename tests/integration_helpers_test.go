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

// integrationLib returns the library for an integration test after checking that it really preloads.
func integrationLib(t *testing.T) string {
	t.Helper()
	lib := testutil.Lib(t)
	testutil.CheckPreload(t, lib)
	return lib
}

// comparison collects one line per mode (throughput, latency, time) and logs them together, so `go
// test -v` shows the runs with and without the library side by side. Nothing asserts on speed.
type comparison struct {
	title string
	rows  []string
}

func (c *comparison) add(m testutil.Mode, format string, args ...any) {
	c.rows = append(c.rows, fmt.Sprintf("%-13s %s", m.Name, fmt.Sprintf(format, args...)))
}

func (c *comparison) log(t *testing.T) {
	t.Helper()
	if len(c.rows) > 0 {
		t.Logf("%s:\n  %s", c.title, strings.Join(c.rows, "\n  "))
	}
}

// clientResult runs a client program to completion and fails the test with its output when it does not
// exit 0 in time.
func runClient(t *testing.T, env []string, timeout time.Duration, path string, args ...string) testutil.Result {
	t.Helper()
	res := testutil.RunProgram(env, timeout, path, args...)
	if res.ExitCode != 0 {
		t.Fatalf("%s %s: %s\nstdout:\n%s\nstderr:\n%s", filepath.Base(path), strings.Join(args, " "), res,
			testutil.Tail(string(res.Stdout), 4000), testutil.Tail(string(res.Stderr), 4000))
	}
	return res
}

// writeFile writes a file for a test and fails the test on error.
func writeFile(t *testing.T, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

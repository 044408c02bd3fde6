package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// RepoRoot returns the root of the goxio repository, found relative to this source file.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	// file is <root>/tests/internal/testutil/paths.go
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Lib returns the absolute path of libgoxio.so: $GOXIO_LIB, or <repo>/build/libgoxio.so.
// It fails the test when the file does not exist.
func Lib(t testing.TB) string {
	t.Helper()
	p := os.Getenv("GOXIO_LIB")
	if p == "" {
		p = filepath.Join(RepoRoot(), "build", "libgoxio.so")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatalf("goxio library path %q: %v", p, err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("goxio library not found (%v): build it with `make lib` or set GOXIO_LIB to its absolute path", err)
	}
	return abs
}

// BinDir returns the folder of goxio's tools: $GOXIO_BIN, or <repo>/build.
func BinDir() string {
	p := os.Getenv("GOXIO_BIN")
	if p == "" {
		p = filepath.Join(RepoRoot(), "build")
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// Tool returns the path of one of goxio's own tools (goxio, goxio_stats) in BinDir.
// It fails the test when the tool is missing.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(BinDir(), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("goxio tool %s not found (%v): build it with `make tools` or set GOXIO_BIN", name, err)
	}
	return p
}

// Program returns the absolute path of an external program the test needs. pkg names the Debian
// package that provides it, for the failure message.
func Program(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("program %s not found (%v): install the Debian package %s", name, err, pkg)
	}
	return p
}

// Python returns the system python3 (Debian's /usr/bin/python3 when present, so a version manager's
// shell-script shim does not stand between the test and the interpreter).
func Python(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return Program(t, "python3", "python3")
}

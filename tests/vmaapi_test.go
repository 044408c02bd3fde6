package tests

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// TestIntegrationVMAExtraAPI runs a program written against goxio_extra.h (tests/vmaapi/zcopy.c):
// without the library it finds no API and copies; under the library it gets VMA's API object and
// moves UDP datagrams (held together, checked after the sender closed, freed with double, foreign
// and cross-socket frees refused) and a TCP stream through recvfrom_zcopy and free_packets, on the
// kernel and on the shared-memory transports; with GOXIO_EXTRA_API=0 the mask is empty, every
// member refuses with EOPNOTSUPP, and it takes its fallback path. The data it prints is the same
// in every run.
func TestIntegrationVMAExtraAPI(t *testing.T) {
	lib := integrationLib(t)
	bin := filepath.Join(t.TempDir(), "zcopy")
	testutil.CompileC(t, filepath.Join(testutil.RepoRoot(), "tests", "vmaapi", "zcopy.c"), bin, "-O2", "-Wall", "-Werror")
	want := runClient(t, testutil.Env(""), 30*time.Second, bin, "none")
	runs := []struct {
		name, mode string
		env        []string
	}{
		{"kernel transport", "full", testutil.Env(lib)},
		{"shared memory", "full", testutil.Env(lib, shmEnv...)},
		{"mask cleared", "cleared", testutil.Env(lib, "GOXIO_EXTRA_API=0")},
		{"mask cleared, shared memory", "cleared", testutil.Env(lib, append([]string{"GOXIO_EXTRA_API=off"}, shmEnv...)...)},
	}
	for _, r := range runs {
		got := runClient(t, r.env, 30*time.Second, bin, r.mode)
		if !bytes.Equal(got.Stdout, want.Stdout) {
			t.Errorf("%s: output differs from the run without the library:\n%s\nwant:\n%s\nstderr:\n%s", r.name,
				got.Stdout, want.Stdout, testutil.Tail(string(got.Stderr), 2000))
		}
		if bytes.Contains(got.Stderr, []byte("unknown parameter")) {
			t.Errorf("%s: %s", r.name, got.Stderr)
		}
	}
}

package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	preloadOnce sync.Map // lib path -> error string ("" when fine)
)

// CheckPreload fails the test unless a program started with LD_PRELOAD=lib really maps the library:
// ld.so only warns and runs the program without it when a preload cannot be loaded, which would make
// every comparison with the kernel pass for the wrong reason. The check runs once per library path.
func CheckPreload(t testing.TB, lib string) {
	t.Helper()
	if v, ok := preloadOnce.Load(lib); ok {
		if msg := v.(string); msg != "" {
			t.Fatal(msg)
		}
		return
	}
	msg := ""
	cmd := exec.Command("/bin/cat", "/proc/self/maps")
	cmd.Env = Env(lib)
	res := Run(cmd, 30*time.Second)
	switch {
	case res.ExitCode != 0:
		msg = "a program under LD_PRELOAD=" + lib + " failed: " + res.String() + "\n" + string(res.Stderr)
	case bytes.Contains(res.Stderr, []byte("cannot be preloaded")):
		msg = "ld.so cannot preload " + lib + ":\n" + string(res.Stderr)
	case !bytes.Contains(res.Stdout, []byte(filepath.Base(lib))):
		msg = "LD_PRELOAD=" + lib + " is not mapped into the program (see /proc/self/maps)"
	}
	// The library loads its engine from its own folder at a process's first data call: without
	// it every call would go to the kernel and every comparison pass for the wrong reason.
	engine := filepath.Join(filepath.Dir(lib), "libgoxio-engine.so")
	if st, err := os.Stat(engine); msg == "" && (err != nil || !st.Mode().IsRegular()) {
		msg = "the engine " + engine + " is missing next to " + lib + ": build it with `make lib`"
	}
	preloadOnce.Store(lib, msg)
	if msg != "" {
		t.Fatal(msg)
	}
}

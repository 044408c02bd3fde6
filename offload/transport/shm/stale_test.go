package shm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSweepStaleRingPool: the pool name of a ring whose sender is gone is removed by the start-up
// sweep; a live sender's is kept (they leaked, one 256 KiB file per pooled ring, after a SIGKILL).
func TestSweepStaleRingPool(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(dir, "goxio.ringpool."+strconv.Itoa(gone.Process.Pid)+".1")
	live := filepath.Join(dir, "goxio.ringpool."+strconv.Itoa(os.Getpid())+".1")
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, make([]byte, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := SweepStale(dir); n != 1 {
		t.Fatalf("SweepStale removed %d files, want 1", n)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the dead sender's pool name is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("the live sender's pool name went: %v", err)
	}
}

package stats

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNoSpace creates a segment on a tiny tmpfs: the failure must be an
// error wrapping ErrNoSpace at creation, with no file left behind (not a
// SIGBUS at the first counter).
func TestNoSpace(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	_, err := Create(dir, 65536, ProcessInfo{})
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Create on a full file system: %v, want ErrNoSpace", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
	// A small segment still fits.
	w, err := Create(dir, 4, ProcessInfo{})
	if err != nil {
		t.Fatalf("small segment on the small tmpfs: %v", err)
	}
	w.Open(1).CountRx(false, 1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FilePrefix+"1")); err == nil {
		t.Error("unexpected file")
	}
}

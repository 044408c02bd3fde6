package discovery

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSweepNamespaces: the per-namespace files of a namespace no process of the user is in go;
// those of a namespace a process of the user is in (this test's own, found by the scan of /proc,
// not by the self exception), another user's, and names that are not per-namespace files stay.
func TestSweepNamespaces(t *testing.T) {
	dir := t.TempDir()
	uid := unix.Geteuid()
	own, err := NetNS()
	if err != nil {
		t.Fatal(err)
	}
	pairs := func(uid int, netns uint64) string {
		return "goxio." + strconv.Itoa(uid) + "." + strconv.FormatUint(netns, 10) + ".pairs2"
	}
	const gone = 1234567      // no namespace has this inode
	files := map[string]bool{ // name: must stay
		FileName(uid, own):                      true,
		pairs(uid, own):                         true,
		FileName(uid, gone):                     false,
		pairs(uid, gone):                        false,
		FileName(uid+1, gone):                   true, // another user's
		"goxio." + strconv.Itoa(uid) + ".x.dir": true,
		"goxio." + strconv.Itoa(uid) + "." + strconv.Itoa(gone) + ".in.5.1": true, // an inbox: not ours to judge
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		t.Fatal(err)
	}
	n, err := SweepNamespaces(dir, uid, 0, FileName, pairs)
	if st.Ino != initPIDNamespace {
		// In a container the scan cannot see every process: nothing may go.
		if err == nil || n != 0 {
			t.Fatalf("outside the initial PID namespace: removed %d, error %v; want none and an error", n, err)
		}
		for name := range files {
			files[name] = true
		}
	} else if err != nil || n != 2 {
		t.Fatalf("removed %d files, error %v; want 2 and none", n, err)
	}
	for name, stay := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if stay && err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
		if !stay && err == nil {
			t.Errorf("%s, of a namespace nobody is in, stayed", name)
		}
	}
}

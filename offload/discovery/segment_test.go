package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSegmentFile: the segment is created 0600, complete, under its name,
// and a second Open maps the same table.
func TestSegmentFile(t *testing.T) {
	d, dir := openTest(t)
	path := filepath.Join(dir, FileName(unix.Geteuid(), testNetNS))
	if d.Path() != path {
		t.Errorf("Path %q, want %q", d.Path(), path)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode())
	}
	if st.Size() != int64(segmentWords(Entries))*8 {
		t.Errorf("size %d", st.Size())
	}
	mustPublish(t, d, v4("a", "127.0.0.1:4700"))
	d2, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if d2.Gen() != d.Gen() || d.Gen() == 0 {
		t.Errorf("generations %d and %d", d.Gen(), d2.Gen())
	}
	if got := lookupOne(t, d2, "127.0.0.1:4700", "127.0.0.1:1"); got != "a" {
		t.Errorf("second mapping: %q", got)
	}
	// Another namespace is another segment.
	d3, err := Open(dir, unix.Geteuid(), testNetNS+1)
	if err != nil {
		t.Fatal(err)
	}
	defer d3.Close()
	if got := lookupOne(t, d3, "127.0.0.1:4700", "127.0.0.1:1"); got != "" {
		t.Errorf("other namespace sees %q", got)
	}
}

// TestCreateNamedTemp: the fallback for file systems without O_TMPFILE
// builds the segment under a temporary name, links it and removes the
// temporary name; a second creator gets EEXIST and the first segment stays.
func TestCreateNamedTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName(unix.Geteuid(), testNetNS))
	if err := create(dir, path, false); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	mustPublish(t, d, v4("a", "127.0.0.1:4900"))
	for _, unnamed := range []bool{false, true} {
		if err := create(dir, path, unnamed); !errors.Is(err, unix.EEXIST) {
			t.Errorf("second create (unnamed %v): %v, want EEXIST", unnamed, err)
		}
	}
	if got := lookupOne(t, d, "127.0.0.1:4900", "127.0.0.1:1"); got != "a" {
		t.Errorf("segment replaced: %q", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("files: %v", ents)
	}
}

// TestIncompatible: a file under the segment's name that is open to others,
// of another size or with an unknown header is refused.
func TestIncompatible(t *testing.T) {
	size := int64(segmentWords(Entries)) * 8
	cases := []struct {
		name string
		mode os.FileMode
		size int64
	}{
		{"world-readable", 0o644, size},
		{"short", 0o600, 4096},
		{"garbage-header", 0o600, size},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName(unix.Geteuid(), testNetNS))
			if err := os.WriteFile(path, []byte("not a segment"), c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, c.size); err != nil {
				t.Fatal(err)
			}
			d, err := Open(dir, unix.Geteuid(), testNetNS)
			if !errors.Is(err, ErrIncompatible) {
				d.Close()
				t.Fatalf("Open: %v, want ErrIncompatible", err)
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "elsewhere")
		if err := os.WriteFile(target, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, FileName(unix.Geteuid(), testNetNS))); err != nil {
			t.Fatal(err)
		}
		if d, err := Open(dir, unix.Geteuid(), testNetNS); err == nil {
			d.Close()
			t.Fatal("Open followed a symbolic link")
		}
	})
}

// TestNoSpace: on a full file system creation fails with ErrNoSpace and
// leaves nothing behind (no SIGBUS later).
func TestNoSpace(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mount a small tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	_, err := Open(dir, unix.Geteuid(), testNetNS)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Open on a full file system: %v, want ErrNoSpace", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestNetNS returns the inode the namespace link names ("net:[INODE]").
func TestNetNS(t *testing.T) {
	ns, err := NetNS()
	if err != nil {
		t.Fatal(err)
	}
	link, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if want := "net:[" + strconv.FormatUint(ns, 10) + "]"; ns == 0 || link != want {
		t.Errorf("NetNS %d, link %q", ns, link)
	}
}

// TestClosed: a closed Dir refuses Publish and answers nothing.
func TestClosed(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, unix.Geteuid(), testNetNS)
	if err != nil {
		t.Fatal(err)
	}
	h := mustPublish(t, d, v4("a", "127.0.0.1:4800"))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Publish(v4("b", "127.0.0.1:4801")); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close: %v", err)
	}
	if got := d.Lookup(ap("127.0.0.1:4800"), ap("127.0.0.1:1"), nil); len(got) != 0 || d.Gen() != 0 || d.Sweep() != 0 {
		t.Errorf("closed Dir answered %v", got)
	}
	h.Withdraw()
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestPublishInvalid: entries that cannot be published are refused with
// ErrInvalid.
func TestPublishInvalid(t *testing.T) {
	d, _ := openTest(t)
	long := make([]byte, maxInbox+1)
	for i := range long {
		long[i] = 'x'
	}
	bad := []Entry{
		{Family: 99, Local: ap("127.0.0.1:1"), Inbox: "a"},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:0"), Inbox: "a"},
		{Family: unix.AF_INET, Local: ap("[::1]:1"), Inbox: "a"},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:1"), Peer: ap("[::1]:1"), Inbox: "a"},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:1"), V6Only: true, Inbox: "a"},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:1"), Group: ad("10.0.0.1"), Inbox: "a"},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:1"), Group: ad("ff02::1"), Inbox: "a"},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:1"), Source: ad("10.0.0.1"), Inbox: "a"},
		{Family: unix.AF_INET6, Local: ap("[::]:1"), Group: ad("ff02::1"), Source: ad("10.0.0.1"), Inbox: "a"},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:1"), Inbox: ""},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:1"), Inbox: ".."},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:1"), Inbox: "a/b"},
		{Family: unix.AF_INET, Local: ap("127.0.0.1:1"), Inbox: string(long)},
	}
	for _, e := range bad {
		if _, err := d.Publish(e); !errors.Is(err, ErrInvalid) {
			t.Errorf("Publish %+v: %v, want ErrInvalid", e, err)
		}
	}
	if d.high() != 0 {
		t.Errorf("refused entries took slots: high %d", d.high())
	}
}

package shmseg

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenTable: the first opener creates the table with its header, the next maps the same
// memory; a header of another layout is ErrHeader and a file of another size ErrSize, and
// neither is changed.
func TestOpenTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "table")
	hdr := []uint64{0x1122334455667788, 1, 16}
	a, err := OpenTable(dir, path, 4096, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(Bytes(a))
	for i, w := range hdr {
		if a[i] != w {
			t.Fatalf("word %d: %#x, want %#x", i, a[i], w)
		}
	}
	a[100] = 42
	b, err := OpenTable(dir, path, 4096, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(Bytes(b))
	if b[100] != 42 {
		t.Errorf("second mapping reads %d where the first wrote 42", b[100])
	}
	if _, err := OpenTable(dir, path, 4096, []uint64{0x1122334455667788, 2, 16}); !errors.Is(err, ErrHeader) {
		t.Errorf("another version: %v, want ErrHeader", err)
	}
	if _, err := OpenTable(dir, path, 8192, hdr); !errors.Is(err, ErrSize) {
		t.Errorf("another size: %v, want ErrSize", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 4096 || a[1] != 1 {
		t.Errorf("the table changed: size %d, version %d", st.Size(), a[1])
	}
}

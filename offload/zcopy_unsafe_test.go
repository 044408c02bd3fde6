package offload

import (
	"testing"
	"unsafe"
)

// TestZcopyArgsLayout: zcopyArgs has struct goxio_zcopy's layout (shim/goxio.h; vma_records.c
// asserts its size on the C side).
func TestZcopyArgsLayout(t *testing.T) {
	var z zcopyArgs
	if s := unsafe.Sizeof(z); s != 80 {
		t.Fatalf("size %d, want 80", s)
	}
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"len", unsafe.Offsetof(z.len), 8}, {"flags", unsafe.Offsetof(z.flags), 16}, {"op", unsafe.Offsetof(z.op), 20},
		{"from", unsafe.Offsetof(z.from), 24},
		{"fromlen", unsafe.Offsetof(z.fromlen), 32}, {"data", unsafe.Offsetof(z.data), 40}, {"token", unsafe.Offsetof(z.token), 48},
		{"box", unsafe.Offsetof(z.box), 56}, {"epoch", unsafe.Offsetof(z.epoch), 64}, {"queued", unsafe.Offsetof(z.queued), 68},
		{"advice", unsafe.Offsetof(z.advice), 72},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, want %d", c.name, c.got, c.want)
		}
	}
}

package shm

import (
	"testing"
	"unsafe"
)

// TestRingCLayout compares the preload library's copy of the ring's layout
// (shim/preload/ring_layout.h) with this package's.
func TestRingCLayout(t *testing.T) {
	checkCDefines(t, "ring_layout.h", "GOXIO_RING_", map[string]uint64{
		"TAIL": rgTail, "PUSHED": rgPushed, "DROPS": rgDrops, "WAKES": rgWakes, "BUSY": rgBusy, "HEAD": rgHead,
		"DETACHED": rgDetached, "DATA_OFF": ringDataOff, "HDR": recHdr, "NAME_OFF": recNameOff, "MAX_NAME": MaxName,
		"ALIGN": recAlign, "KIND_DATA": kindData, "KIND_PAD": kindPad, "IB_CLOSED": ibClosed, "IB_LIMIT": ibLimit,
		"IB_SPINNERS": ibSpinners, "IB_WAKE": ibWake, "SKB_OVERHEAD": SkbOverhead,
	})
}

// TestProdLayout: prodState has struct goxio_prod's layout (shim/goxio.h; rsend.c asserts the
// same offsets on the C side).
func TestProdLayout(t *testing.T) {
	var s prodState
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"open", unsafe.Offsetof(s.open), 4}, {"epoch", unsafe.Offsetof(s.epoch), 8},
		{"tail", unsafe.Offsetof(s.tail), 16}, {"headCache", unsafe.Offsetof(s.headCache), 24},
		{"pushed", unsafe.Offsetof(s.pushed), 32}, {"drops", unsafe.Offsetof(s.drops), 40},
		{"wakes", unsafe.Offsetof(s.wakes), 48}, {"capacity", unsafe.Offsetof(s.capacity), 56},
		{"ring", unsafe.Offsetof(s.ring), 64}, {"inbox", unsafe.Offsetof(s.inbox), 72},
		{"stTx", unsafe.Offsetof(s.stTx), 80}, {"stWake", unsafe.Offsetof(s.stWake), 88},
		{"size", unsafe.Sizeof(s), cellSize},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, want %d", c.name, c.got, c.want)
		}
	}
}

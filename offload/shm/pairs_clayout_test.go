package shm

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPairsCLayout compares the preload library's copy of the pairing table's layout
// (shim/preload/pairs_layout.h) with this package's.
func TestPairsCLayout(t *testing.T) {
	b, err := os.ReadFile("../../shim/preload/pairs_layout.h")
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`(?m)^#define GOXIO_PAIRS_(\w+) +(\S+)`)
	got := map[string]string{}
	for _, m := range def.FindAllStringSubmatch(string(b), -1) {
		got[m[1]] = m[2]
	}
	want := map[string]uint64{
		"MAGIC": pairsMagic, "VERSION": pairsVersion, "HEADER_WORDS": pairsHeaderWords, "SLOTS": PairSlots,
		"WORDS": pairWords, "PROBE": pairProbe, "FREE": pairFree, "BUSY": pairBusy, "REG": pairReg,
		"READY": pairReady, "GONE": pairGone, "SEED": pairSeed, "MUL": pairMul,
	}
	for name, w := range want {
		s, ok := got[name]
		if !ok {
			t.Errorf("pairs_layout.h: no GOXIO_PAIRS_%s", name)
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSuffix(s, "ULL"), 0, 64)
		if err != nil || v != w {
			t.Errorf("pairs_layout.h: GOXIO_PAIRS_%s = %s, Go has %#x", name, s, w)
		}
		delete(got, name)
	}
	for name := range got {
		t.Errorf("pairs_layout.h: GOXIO_PAIRS_%s is not checked against Go", name)
	}
}

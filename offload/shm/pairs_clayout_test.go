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
	checkCDefines(t, "pairs_layout.h", "GOXIO_PAIRS_", map[string]uint64{
		"MAGIC": pairsMagic, "VERSION": pairsVersion, "HEADER_WORDS": pairsHeaderWords, "SLOTS": PairSlots,
		"WORDS": pairWords, "PROBE": pairProbe, "FREE": pairFree, "BUSY": pairBusy, "REG": pairReg,
		"READY": pairReady, "GONE": pairGone, "SEED": pairSeed, "MUL": pairMul,
	})
}

// checkCDefines compares the "#define PREFIXNAME value" lines of the preload library's header
// file (shim/preload/) with want, in both directions: a value that differs, a name missing, a
// define Go does not check.
func checkCDefines(t *testing.T, file, prefix string, want map[string]uint64) {
	t.Helper()
	b, err := os.ReadFile("../../shim/preload/" + file)
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`(?m)^#define ` + prefix + `(\w+) +(\S+)`)
	got := map[string]string{}
	for _, m := range def.FindAllStringSubmatch(string(b), -1) {
		got[m[1]] = m[2]
	}
	for name, w := range want {
		s, ok := got[name]
		if !ok {
			t.Errorf("%s: no %s%s", file, prefix, name)
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSuffix(s, "ULL"), 0, 64)
		if err != nil || v != w {
			t.Errorf("%s: %s%s = %s, Go has %#x", file, prefix, name, s, w)
		}
		delete(got, name)
	}
	for name := range got {
		t.Errorf("%s: %s%s is not checked against Go", file, prefix, name)
	}
}

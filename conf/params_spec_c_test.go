package conf

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEarlyWaitSpecs checks the preload library's copy of the VMA_SPEC profiles that turn receive
// polling off (shim/preload/early_wait.c, which decides before any engine reads the parameters):
// every name and alias of a profile that sets VMA_RX_POLL to 0, and nothing else.
func TestEarlyWaitSpecs(t *testing.T) {
	src, err := os.ReadFile("../shim/preload/early_wait.c")
	if err != nil {
		t.Fatalf("read early_wait.c: %v", err)
	}
	m := regexp.MustCompile(`off\[\] = \{([^}]*)\}`).FindSubmatch(src)
	if m == nil {
		t.Fatal("early_wait.c: no off[] list of profiles")
	}
	var c []string
	for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllSubmatch(m[1], -1) {
		c = append(c, strings.ToLower(string(q[1])))
	}
	var want []string
	for _, s := range specs {
		for _, kv := range s.set {
			if kv[0] == "VMA_RX_POLL" && kv[1] == "0" {
				want = append(append(want, s.name), s.aliases...)
			}
		}
	}
	slices.Sort(c)
	slices.Sort(want)
	if !slices.Equal(c, want) {
		t.Errorf("early_wait.c turns polling off for profiles %v; conf's profiles with VMA_RX_POLL=0 are %v", c, want)
	}
}

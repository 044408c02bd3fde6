package transport

import (
	"os"
	"regexp"
	"testing"
)

// TestOpsMatchShim checks that the operation numbers agree with enum goxio_op in shim/goxio.h.
func TestOpsMatchShim(t *testing.T) {
	src, err := os.ReadFile("../../shim/goxio.h")
	if err != nil {
		t.Fatalf("read shim header: %v", err)
	}
	enum := regexp.MustCompile(`(?s)enum goxio_op \{(.*?)\};`).FindSubmatch(src)
	if enum == nil {
		t.Fatal("enum goxio_op not found in shim/goxio.h")
	}
	names := regexp.MustCompile(`GOXIO_OP_([A-Z0-9_]+)`).FindAllSubmatch(enum[1], -1)
	if len(names) != int(OpMax) {
		t.Fatalf("shim has %d operations (with MAX), Go has %d", len(names), int(OpMax))
	}
	for i, n := range names[:len(names)-1] {
		op := Op(i + 1)
		want := map[string]string{"ACCEPT4": "accept4"}[string(n[1])]
		if want == "" {
			want = lower(string(n[1]))
		}
		if op.String() != want {
			t.Errorf("operation %d: shim GOXIO_OP_%s, Go %s", i+1, n[1], op)
		}
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func TestKindReasonStrings(t *testing.T) {
	kinds := map[Kind]string{KindOS: "os", KindSHM: "shm", KindXDP: "xdp"}
	for k, want := range kinds {
		if k.String() != want {
			t.Errorf("Kind %d: %q, want %q", k, k.String(), want)
		}
	}
	reasons := map[Reason]string{ReasonNone: "none", ReasonNoFasterPath: "no faster path",
		ReasonForkedChild: "forked child", ReasonNoCapabilities: "missing capabilities", ReasonNoXDP: "no XDP support",
		ReasonUnsupportedProtocol: "unsupported protocol"}
	for r, want := range reasons {
		if r.String() != want {
			t.Errorf("Reason %d: %q, want %q", r, r.String(), want)
		}
	}
	if s := Reason(200).String(); s != "Reason(200)" {
		t.Errorf("an unknown reason: %q", s)
	}
}

package testutil

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	if d := Diff("a\nb\n", "a\nb\n"); d != "" {
		t.Fatalf("equal texts: got diff %q", d)
	}
	d := Diff("a\nb\nc\n", "a\nx\nc\n")
	if !strings.Contains(d, "- b\n") || !strings.Contains(d, "+ x\n") || !strings.Contains(d, "  a\n") {
		t.Fatalf("diff of changed middle line:\n%s", d)
	}
	long := strings.Repeat("same\n", 20)
	d = Diff(long+"old\n", long+"new\n")
	if !strings.Contains(d, "   ...\n") || strings.Count(d, "same") != 2 {
		t.Fatalf("diff must elide far context:\n%s", d)
	}
}

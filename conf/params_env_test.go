package conf

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryGoxioVariableKnown: every GOXIO_* environment variable the project's code reads
// (a string literal in a non-test Go file) is either a parameter or listed in otherEnv, so
// Load never tells a user that a variable the library does read is "unknown; ignored".
func TestEveryGoxioVariableKnown(t *testing.T) {
	lit := regexp.MustCompile(`"(GOXIO_[A-Z0-9_]+)"`)
	found := map[string]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "build" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllSubmatch(b, -1) {
			found[string(m[1])] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 5 {
		t.Fatalf("found only %d GOXIO_ variables in the source: %v", len(found), found)
	}
	for name, path := range found {
		_, warns := Load([]string{name + "=1"})
		for _, w := range warns {
			if strings.Contains(w.Msg, "unknown") {
				t.Errorf("%s (read in %s): Load warns %q", name, path, w.Msg)
			}
		}
	}
}

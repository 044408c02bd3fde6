package conf

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var globCases = []struct {
	pattern, name string
	want          bool
}{
	{"*", "", true},
	{"*", "anything/with/slash", true},
	{"", "", true},
	{"", "a", false},
	{"db2*", "db2", true},
	{"db2*", "db2sysc", true},
	{"db2*", "xdb2", false},
	{"t?cp", "ttcp", true},
	{"t?cp", "tcp", false},
	{"t?cp", "tttcp", false},
	{"*.sh", ".sh", true},
	{"*a*b*c", "aXbXc", true},
	{"*a*b*c", "aXbXcX", false},
	{"a**b", "ab", true},
	{"[abc]x", "bx", true},
	{"[abc]x", "dx", false},
	{"[!abc]x", "dx", true},
	{"[^abc]x", "ax", false},
	{"[a-c]", "b", true},
	{"[a-c]", "-", false},
	{"[a-]", "-", true},
	{"[]]", "]", true},
	{"[!]]", "a", true},
	{"[!]]", "]", false},
	{"[[:digit:]]x", "7x", true},
	{"[[:digit:]]x", "ax", false},
	{"[[:alpha:][:digit:]]", "Q", true},
	{"[[:bogus:]]", ":", false},
	{"[abc", "[abc", true},
	{"[abc", "a", false},
	{`\*`, "*", true},
	{`\*`, "a", false},
	{`a\`, `a\`, false},
	{`a\`, `a`, false},
	{`[\]]`, "]", true},
	{`[a\-z]`, "-", true},
	{`[a\-z]`, "b", false},
	{"[z-a]", "m", false},
	{"?", "é"[:1], true},
}

func TestGlob(t *testing.T) {
	for _, c := range globCases {
		g := compileGlob(c.pattern)
		if got := g.match(c.name); got != c.want {
			t.Errorf("glob %q on %q = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// TestGlobAgainstFnmatch compares the matcher with glibc's fnmatch(3), which
// VMA uses, on fixed and random patterns.
func TestGlobAgainstFnmatch(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc is needed to build the fnmatch reference: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "fnm.c")
	bin := filepath.Join(dir, "fnm")
	const prog = `#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
int main(void) {
	static char line[4096];
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		char *tab = strchr(line, '\t');
		if (!tab) return 2;
		*tab = 0;
		printf("%d\n", fnmatch(line, tab + 1, 0) == 0);
	}
	return 0;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("build fnmatch reference: %v\n%s", err, out)
	}

	type pair struct{ p, n string }
	var pairs []pair
	for _, c := range globCases {
		pairs = append(pairs, pair{c.pattern, c.name})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab*?[]!^-\\:xz[:alpha:]"
	const nameAlphabet = "ab-]x[\\!z:"
	for i := 0; i < 20000; i++ {
		var p, n strings.Builder
		for j := rng.IntN(8); j > 0; j-- {
			p.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		for j := rng.IntN(6); j > 0; j-- {
			n.WriteByte(nameAlphabet[rng.IntN(len(nameAlphabet))])
		}
		pairs = append(pairs, pair{p.String(), n.String()})
	}
	var in strings.Builder
	for _, pr := range pairs {
		in.WriteString(pr.p + "\t" + pr.n + "\n")
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run fnmatch reference: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	bad := 0
	for i := 0; sc.Scan(); i++ {
		want := sc.Text() == "1"
		g := compileGlob(pairs[i].p)
		if got := g.match(pairs[i].n); got != want && bad < 20 {
			bad++
			t.Errorf("glob %q on %q = %v, fnmatch says %v", pairs[i].p, pairs[i].n, got, want)
		}
	}
}

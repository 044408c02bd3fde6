package tests

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// semanticVariant is one way of compiling the semantic programs. The fortified large-file build makes
// glibc route calls through __recv_chk, __read_chk, __recvfrom_chk, __poll_chk, fcntl64, sendfile64.
type semanticVariant struct {
	name  string
	flags []string
}

var semanticVariants = []semanticVariant{
	{"plain", []string{"-O1", "-D_GNU_SOURCE", "-Wall", "-Wno-unused-function"}},
	{"fortify", []string{"-O2", "-D_GNU_SOURCE", "-D_FORTIFY_SOURCE=2", "-D_FILE_OFFSET_BITS=64",
		"-Wall", "-Wno-unused-function", "-Wno-stringop-overflow", "-Wno-nonnull"}},
}

// semanticTimeout bounds one run of one program unless its source says "// timeout: <duration>".
const semanticTimeout = 20 * time.Second

var timeoutDirective = regexp.MustCompile(`(?m)^// timeout: (\S+)$`)

// TestSemantic compiles every tests/semantic/*.c program, runs it without and with the library and
// requires the same stdout transcript and exit code. The run without the library must also pass the
// program's own checks (exit code 0), which keeps the programs honest about the kernel's behaviour.
func TestSemantic(t *testing.T) {
	lib := testutil.Lib(t)
	testutil.CheckPreload(t, lib)
	srcs, err := filepath.Glob(filepath.Join(testutil.RepoRoot(), "tests", "semantic", "*.c"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no semantic programs found in tests/semantic (%v)", err)
	}
	dir := t.TempDir()
	for _, v := range semanticVariants {
		t.Run(v.name, func(t *testing.T) {
			for _, src := range srcs {
				name := strings.TrimSuffix(filepath.Base(src), ".c")
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					bin := filepath.Join(dir, v.name+"-"+name)
					runSemantic(t, lib, src, bin, v.flags, requiredImports[v.name+"/"+name])
				})
			}
		})
	}
}

// requiredImports lists, per variant/program, the dynamic symbols the binary must import, so the suite
// notices when a compiler or glibc change stops routing calls through the fortified entry points.
var requiredImports = map[string][]string{
	"fortify/fortify": {"__recv_chk", "__recvfrom_chk", "__read_chk", "__poll_chk", "__ppoll_chk",
		"__fdelt_chk", "fcntl64"},
	"fortify/sendfile": {"sendfile64"},
}

func runSemantic(t *testing.T, lib, src, bin string, flags, imports []string) {
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("read %s: %v", src, err)
	}
	timeout := semanticTimeout
	if m := timeoutDirective.FindSubmatch(code); m != nil {
		if timeout, err = time.ParseDuration(string(m[1])); err != nil {
			t.Fatalf("%s: bad timeout directive %q: %v", src, m[1], err)
		}
	}
	testutil.CompileC(t, src, bin, flags...)
	if len(imports) > 0 {
		checkImports(t, bin, imports)
	}

	run := func(preload string) testutil.Result {
		cmd := exec.Command(bin)
		cmd.Env = testutil.Env(preload)
		cmd.Dir = filepath.Dir(bin)
		return testutil.Run(cmd, timeout)
	}
	ref := run("")
	if ref.ExitCode != 0 {
		t.Fatalf("reference run without the library failed its own checks (a test or environment problem):\n%s",
			describeRun("kernel", ref))
	}
	got := run(lib)
	if got.ExitCode != ref.ExitCode || got.Signal != "" || got.TimedOut ||
		!bytes.Equal(got.Stdout, ref.Stdout) {
		t.Errorf("with LD_PRELOAD=%s: %s, without: %s\ntranscript diff (- kernel, + goxio):\n%s\n%s",
			lib, got, ref, testutil.Diff(string(ref.Stdout), string(got.Stdout)), describeRun("goxio", got))
		return
	}
	t.Logf("kernel %v, goxio %v, %d transcript lines", ref.Elapsed.Round(time.Millisecond),
		got.Elapsed.Round(time.Millisecond), bytes.Count(ref.Stdout, []byte("\n")))
}

// checkImports fails the test when the executable does not import every symbol in want.
func checkImports(t *testing.T, bin string, want []string) {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("open %s: %v", bin, err)
	}
	defer f.Close()
	syms, err := f.ImportedSymbols()
	if err != nil {
		t.Fatalf("imported symbols of %s: %v", bin, err)
	}
	have := map[string]bool{}
	for _, s := range syms {
		have[s.Name] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("%s does not import %s: the program no longer exercises it", filepath.Base(bin), w)
		}
	}
}

// describeRun renders a run for a failure message.
func describeRun(what string, r testutil.Result) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s: %s, %v\n--- stdout ---\n%s", what, r, r.Elapsed.Round(time.Millisecond), testutil.Tail(string(r.Stdout), 6000))
	if len(r.Stderr) > 0 {
		fmt.Fprintf(&b, "--- stderr ---\n%s", testutil.Tail(string(r.Stderr), 3000))
	}
	return b.String()
}

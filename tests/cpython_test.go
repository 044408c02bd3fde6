package tests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goxio/goxio/tests/internal/testutil"
)

// cpythonSuites are the modules of CPython's own regression suite that exercise sockets, the
// selectors and the event loops (Debian's libpythonX.Y-testsuite).
var cpythonSuites = []string{
	"test_socket", "test_selectors", "test_epoll", "test_poll", "test_select",
	"test_asyncio.test_sock_lowlevel", "test_asyncio.test_events", "test_asyncio.test_streams",
}

// cpythonArgs are the driver's options for every run. No resource (-u) is needed: the loopback
// tests need none, and the one test of these modules that asks for "network" goes to python.org
// (there is no internet here; it is skipped in both runs). The driver's own per-test timeout
// ends a hung run with a traceback of every thread.
var cpythonArgs = []string{
	"-m", "test", "-v", "--timeout", "120",
	// AF_VSOCK stream tests block in accept for ever without the library in a machine without
	// a vsock transport (and goxio passes AF_VSOCK through untouched).
	"-i", "*VSOCK*",
}

// cpythonBound bounds one run of one module (test_socket takes about 30 s on a quiet machine).
const cpythonBound = 8 * time.Minute

// cpythonParallel bounds the driver runs at once (each module runs without and with the library
// at the same time).
const cpythonParallel = 4

// cpythonExpected are the known differences, each with the issue whose work removes it.
// None today: the banner that the subprocesses of test_asyncio.test_events' subprocess tests wrote on
// their stderr (issue 16) is gone with the engine on demand (a process that moves no inet data
// loads no engine and prints nothing).
var cpythonExpected = []pyExpected{}

// TestCPythonSuites runs CPython's own socket, selector and event-loop suites with the system
// Python without and with the library (settings of $GOXIO_TEST_LIB_ENV) and requires the same
// outcome for every test case. A difference is confirmed by a second run of the differing cases
// in both modes before it fails the test (timing-sensitive cases of these suites fail now and
// then under load without the library too); the report lists each confirmed case with both
// outcomes and the failure's message.
func TestCPythonSuites(t *testing.T) {
	lib := integrationLib(t)
	py := testutil.Python(t)
	for _, m := range cpythonSuites {
		res := testutil.RunProgram(testutil.Env(""), time.Minute, py, "-c", "import test."+m)
		if res.ExitCode != 0 {
			t.Fatalf("CPython's test suite is missing (%s: %s): install Debian's libpythonX.Y-testsuite for %s "+
				"(scripts/install-deps.sh)\n%s", m, res, py, testutil.Tail(string(res.Stderr), 2000))
		}
	}
	run := &pyRunner{py: py, lib: lib, slots: make(chan struct{}, cpythonParallel)}
	var mu sync.Mutex
	matched, ran := map[int]bool{}, map[string]bool{}
	t.Run("suites", func(t *testing.T) {
		for _, m := range cpythonSuites {
			t.Run(m, func(t *testing.T) {
				t.Parallel()
				got := run.compare(t, m)
				mu.Lock()
				defer mu.Unlock()
				ran[m] = true
				for i := range got {
					matched[i] = true
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	for i, e := range cpythonExpected {
		if ran[strings.TrimPrefix(e.module(), "test.")] && !matched[i] {
			t.Errorf("expected difference gone: %s (%s without the library, %s with it; %s, issue %d): "+
				"remove it from cpythonExpected", e.pattern, e.kernel, e.goxio, e.why, e.issue)
		}
	}
}

// pyRunner runs the driver on modules, a bounded number at once.
type pyRunner struct {
	py, lib string
	slots   chan struct{}
}

// compare runs module without and with the library, confirms the differences by a second run
// of the differing cases, and fails t with the confirmed ones. It returns the indexes of the
// expected differences that appeared.
func (r *pyRunner) compare(t *testing.T, module string) map[int]bool {
	kernel, goxio := r.both(t, module, nil)
	if len(kernel) == 0 {
		t.Fatalf("%s: no test case ran without the library", module)
	}
	unexpected, known, matched := compareResults(kernel, goxio, cpythonExpected)
	for _, d := range known {
		t.Logf("expected difference: %s: kernel %s, goxio %s", d.id, d.kernel.result, d.goxio.result)
	}
	if len(unexpected) == 0 {
		return matched
	}
	kernel2, goxio2 := r.both(t, module, rerunPatterns(unexpected))
	var confirmed, passed []pyDifference
	for _, d := range unexpected {
		k, g := outcomeOf(kernel2, d.id), outcomeOf(goxio2, d.id)
		if k.result != g.result {
			confirmed = append(confirmed, pyDifference{d.id, k, g})
		} else {
			passed = append(passed, d)
		}
	}
	if len(passed) > 0 {
		t.Logf("%s: differences of the first run that a second run of the case did not show (timing):\n%s",
			module, formatDifferences(passed))
	}
	if len(confirmed) > 0 {
		t.Errorf("%s: %d test case(s) with another outcome under the library (confirmed by a second run):\n%s",
			module, len(confirmed), formatDifferences(confirmed))
	}
	return matched
}

// both runs module (only the test ids of match when it is not empty) without and with the
// library at the same time.
func (r *pyRunner) both(t *testing.T, module string, match []string) (kernel, goxio pyResults) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); kernel = r.run(t, module, "", match) }()
	go func() { defer wg.Done(); goxio = r.run(t, module, r.lib, match) }()
	wg.Wait()
	return kernel, goxio
}

// run runs the driver once on module, with the library lib preloaded when it is not empty, and
// returns the outcomes. A run that ended without a report gives the pseudo case "<module> (run)".
func (r *pyRunner) run(t *testing.T, module, lib string, match []string) pyResults {
	r.slots <- struct{}{}
	defer func() { <-r.slots }()
	mode := "kernel"
	if lib != "" {
		mode = "goxio"
	}
	// A short folder: test_socket binds AF_UNIX sockets under it (108 bytes at most).
	// (Runs on a goroutine of its own: errors are outcomes, never t.Fatal.)
	dir, err := os.MkdirTemp("", "goxio-py-"+mode)
	if err != nil {
		return pyResults{module + " (run)": {result: "no report: temp dir: " + err.Error()}}
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "junit.xml")
	args := append(append([]string{}, cpythonArgs...), "--junit-xml", report)
	if len(match) > 0 {
		file := filepath.Join(dir, "match.txt")
		if err := os.WriteFile(file, []byte(strings.Join(match, "\n")+"\n"), 0o644); err != nil {
			return pyResults{module + " (run)": {result: "no report: match file: " + err.Error()}}
		}
		args = append(args, "--matchfile", file)
	}
	args = append(args, module)
	cmd := testutil.Command(testutil.Env(lib, "PYTHONDONTWRITEBYTECODE=1", "TMPDIR="+dir), r.py, args...)
	cmd.Dir = dir
	res := testutil.Run(cmd, cpythonBound)
	output := string(res.Stdout) + string(res.Stderr)
	t.Logf("%s %s (%s): %s in %v", module, mode, matchNote(match), res, res.Elapsed.Round(time.Millisecond))
	data, err := os.ReadFile(report)
	results := pyResults{}
	if err == nil {
		if results, err = parseJUnit(data); err != nil {
			results = pyResults{}
		}
	}
	if err != nil || res.TimedOut || res.Signal != "" {
		why := res.String()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			why += "; " + err.Error()
		} else if err != nil {
			why += "; no report"
		}
		results[module+" (run)"] = pyOutcome{result: "no report: " + why, detail: testutil.Tail(output, 3000)}
	}
	results.addFailureHeaders(output)
	return results
}

// rerunPatterns are the driver's match patterns that run the cases of diffs again: a test id, a
// fixture's class (all its cases), or nil (the whole module) for a run without a report.
func rerunPatterns(diffs []pyDifference) []string {
	var pats []string
	for _, d := range diffs {
		id, fixture, ok := strings.Cut(d.id, " (")
		switch {
		case !ok:
			pats = append(pats, id)
		case fixture == "run)":
			return nil
		default:
			pats = append(pats, strings.TrimSuffix(fixture, ")")+".*")
		}
	}
	return pats
}

func matchNote(match []string) string {
	if len(match) == 0 {
		return "all cases"
	}
	return fmt.Sprintf("%d case(s) again", len(match))
}

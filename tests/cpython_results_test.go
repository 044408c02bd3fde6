package tests

import (
	"encoding/xml"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// The results of one run of CPython's regression test driver (`python3 -m test`) on one module:
// the outcome of every test case, read from its JUnit XML report, completed by the failure
// headers of its verbose output (a test case failed by a subtest and an error in setUpClass are
// missing from the XML), and a pseudo case for a run that ended without a report (a crash, the
// driver's per-test timeout, our own bound).

// pyOutcome is the outcome of one test case: "ok", "FAIL", "ERROR", "skipped",
// "expected failure", "unexpected success", or for a run without a report "no report: <why>".
type pyOutcome struct {
	result string
	detail string // the failure or error message, for the report of a difference
}

// pyResults maps test ids (test.test_socket.GeneralModuleTests.test_repr) to outcomes.
type pyResults map[string]pyOutcome

// junitTestcase is one <testcase> of test.support.testresult.RegressionTestResult's report.
type junitTestcase struct {
	Name    string  `xml:"name,attr"`
	Failure *junitE `xml:"failure"`
	Error   *junitE `xml:"error"`
	Skipped *string `xml:"skipped"`
	Output  *junitE `xml:"output"`  // an expected failure
	Outcome *string `xml:"outcome"` // UNEXPECTED_SUCCESS
}

type junitE struct {
	Message string `xml:"message,attr"`
}

type junitReport struct {
	Cases []junitTestcase `xml:"testsuite>testcase"`
}

// parseJUnit reads the outcomes of a JUnit XML report of the driver.
func parseJUnit(data []byte) (pyResults, error) {
	var rep junitReport
	if err := xml.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("parse junit report: %w", err)
	}
	res := pyResults{}
	for _, c := range rep.Cases {
		if c.Name == "" {
			continue // a case failed by a subtest: its header in the output names it
		}
		var o pyOutcome
		switch {
		case c.Failure != nil:
			o = pyOutcome{"FAIL", c.Failure.Message}
		case c.Error != nil:
			o = pyOutcome{"ERROR", c.Error.Message}
		case c.Skipped != nil:
			// The reason is shown, not compared: it may name the run's folder or pid.
			o = pyOutcome{result: "skipped", detail: strings.TrimSpace(*c.Skipped)}
		case c.Output != nil:
			o = pyOutcome{result: "expected failure"}
		case c.Outcome != nil:
			o = pyOutcome{result: "unexpected success"}
		default:
			o = pyOutcome{result: "ok"}
		}
		res[c.Name] = o
	}
	return res, nil
}

// failureHeader is unittest's header of a failure in the verbose output:
// "FAIL: test_x (test.test_m.Class.test_x)", "ERROR: setUpClass (test.test_m.Class)", with a
// subtest's parameters after it.
var failureHeader = regexp.MustCompile(`(?m)^(FAIL|ERROR): (\S+) \(([^()\s]+)\)`)

// addFailureHeaders records the failures and errors the verbose output names that the report
// does not have as such (subtests, class and module fixtures).
func (r pyResults) addFailureHeaders(output string) {
	for _, m := range failureHeader.FindAllStringSubmatch(output, -1) {
		id := m[3]
		if !strings.HasSuffix(id, "."+m[2]) {
			id = m[2] + " (" + id + ")" // a fixture: setUpClass (test.test_m.Class)
		}
		if o, ok := r[id]; !ok || o.result != "FAIL" && o.result != "ERROR" {
			r[id] = pyOutcome{result: m[1], detail: "see the output of the run"}
		}
	}
}

// pyExpected is a difference between the runs without and with the library that is known, with
// the issue whose work removes it. The test fails when it does not appear, so the list stays true.
type pyExpected struct {
	pattern string // test id, path.Match pattern
	kernel  string // outcome without the library
	goxio   string // outcome with it
	issue   int
	why     string
}

// module is the module of the test ids e names (test.test_asyncio.test_events).
func (e pyExpected) module() string {
	parts := strings.Split(e.pattern, ".")
	for i, p := range parts {
		if strings.ContainsAny(p, "*?[") || p != "test" && !strings.HasPrefix(p, "test_") {
			return strings.Join(parts[:i], ".")
		}
	}
	return e.pattern
}

// pyDifference is a test case whose outcome differs between the runs.
type pyDifference struct {
	id            string
	kernel, goxio pyOutcome
}

// compareResults returns the differences between the run without the library and the run with
// it, and the expected ones among them separately, in id order.
func compareResults(kernel, goxio pyResults, expected []pyExpected) (unexpected, known []pyDifference, matched map[int]bool) {
	matched = map[int]bool{}
	ids := map[string]bool{}
	for id := range kernel {
		ids[id] = true
	}
	for id := range goxio {
		ids[id] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	for _, id := range sorted {
		k, g := outcomeOf(kernel, id), outcomeOf(goxio, id)
		if k.result == g.result {
			continue
		}
		d := pyDifference{id, k, g}
		if i := expectedIndex(expected, d); i >= 0 {
			matched[i] = true
			known = append(known, d)
			continue
		}
		unexpected = append(unexpected, d)
	}
	return unexpected, known, matched
}

func outcomeOf(r pyResults, id string) pyOutcome {
	if o, ok := r[id]; ok {
		return o
	}
	return pyOutcome{result: "not run"}
}

func expectedIndex(expected []pyExpected, d pyDifference) int {
	for i, e := range expected {
		if ok, _ := path.Match(e.pattern, d.id); ok && e.kernel == d.kernel.result && e.goxio == d.goxio.result {
			return i
		}
	}
	return -1
}

// formatDifferences is the report of differences: one line per test case, the outcome without
// and with the library, and the first lines of the message of a failure or the reason of a skip.
func formatDifferences(diffs []pyDifference) string {
	var b strings.Builder
	for _, d := range diffs {
		fmt.Fprintf(&b, "  %s\n      kernel: %s\n      goxio:  %s\n", d.id, d.kernel.result, d.goxio.result)
		for _, o := range []pyOutcome{d.kernel, d.goxio} {
			if o.detail != "" {
				fmt.Fprintf(&b, "      | %s\n", strings.ReplaceAll(firstLines(o.detail, 6), "\n", "\n      | "))
			}
		}
	}
	return b.String()
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}

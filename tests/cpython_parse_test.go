package tests

import (
	"strings"
	"testing"
)

// A report as test.support.testresult writes it: a pass, a failure, an error, a skip, an
// expected failure, an unexpected success, and a case failed by a subtest (no name).
const sampleJUnit = `<testsuites tests="7" errors="1" failures="2"><testsuite start="x" tests="7" errors="1" failures="2">
<testcase name="test.test_m.A.test_ok" status="run" result="completed" time="0.1"/>
<testcase name="test.test_m.A.test_fail" status="run" result="completed" time="0.1"><failure type="AssertionError" message="AssertionError: 1 != 2&#10;">tb</failure></testcase>
<testcase name="test.test_m.A.test_err" status="run" result="completed" time="0.1"><error type="OSError" message="OSError: boom">tb</error></testcase>
<testcase name="test.test_m.A.test_skip" status="run" result="completed" time="0.1"><skipped>needs a thing</skipped></testcase>
<testcase name="test.test_m.A.test_xfail" status="run" result="completed"><output type="E" message="m">tb</output></testcase>
<testcase name="test.test_m.A.test_xpass" status="run" result="completed"><outcome>UNEXPECTED_SUCCESS</outcome></testcase>
<testcase/>
</testsuite></testsuites>`

const sampleOutput = `test_sub (test.test_m.A.test_sub) ... FAIL
======================================================================
FAIL: test_sub (test.test_m.A.test_sub) (i=1)
----------------------------------------------------------------------
ERROR: setUpClass (test.test_m.B)
FAIL: test_fail (test.test_m.A.test_fail)
`

func TestCPythonResultParsing(t *testing.T) {
	res, err := parseJUnit([]byte(sampleJUnit))
	if err != nil {
		t.Fatal(err)
	}
	res.addFailureHeaders(sampleOutput)
	want := map[string]string{
		"test.test_m.A.test_ok": "ok", "test.test_m.A.test_fail": "FAIL", "test.test_m.A.test_err": "ERROR",
		"test.test_m.A.test_skip": "skipped", "test.test_m.A.test_xfail": "expected failure",
		"test.test_m.A.test_xpass": "unexpected success", "test.test_m.A.test_sub": "FAIL",
		"setUpClass (test.test_m.B)": "ERROR",
	}
	for id, w := range want {
		if got := res[id].result; got != w {
			t.Errorf("%s: outcome %q, want %q", id, got, w)
		}
	}
	if len(res) != len(want) {
		t.Errorf("%d outcomes, want %d: %v", len(res), len(want), res)
	}
	if d := res["test.test_m.A.test_skip"].detail; d != "needs a thing" {
		t.Errorf("skip reason %q", d)
	}
	if d := res["test.test_m.A.test_fail"].detail; !strings.Contains(d, "1 != 2") {
		t.Errorf("failure detail %q lacks the message", d)
	}
	if _, err := parseJUnit([]byte("<testsuites><testsuite>")); err == nil {
		t.Error("a truncated report parsed without error")
	}
}

func TestCPythonCompare(t *testing.T) {
	kernel := pyResults{"a.X.t1": {result: "ok"}, "a.X.t2": {result: "ok"}, "a.Y.t3": {result: "ok"},
		"a.Z.t4": {result: "skipped", detail: "r"}}
	goxio := pyResults{"a.X.t1": {result: "ok"}, "a.X.t2": {result: "FAIL", detail: "boom"},
		"a.Y.t3": {result: "FAIL"}, "a.Z.t4": {result: "skipped", detail: "other"}, "a.W.t5": {result: "ok"},
		"a.Z.t6": {result: "ERROR"}}
	expected := []pyExpected{{"a.[XY].t3", "ok", "FAIL", 1, "why"}, {"a.X.t9", "ok", "FAIL", 1, "gone"}}
	unexpected, known, matched := compareResults(kernel, goxio, expected)
	var ids []string
	for _, d := range unexpected {
		ids = append(ids, d.id)
	}
	if got := strings.Join(ids, " "); got != "a.W.t5 a.X.t2 a.Z.t6" {
		t.Errorf("unexpected differences %q", got)
	}
	if len(known) != 1 || known[0].id != "a.Y.t3" || !matched[0] || matched[1] {
		t.Errorf("known %v matched %v", known, matched)
	}
	report := formatDifferences(unexpected)
	for _, s := range []string{"a.W.t5", "kernel: not run", "goxio:  FAIL", "| boom", "goxio:  ERROR"} {
		if !strings.Contains(report, s) {
			t.Errorf("report lacks %q:\n%s", s, report)
		}
	}
	if p := rerunPatterns([]pyDifference{{id: "a.X.t2"}, {id: "setUpClass (a.B)"}}); strings.Join(p, " ") != "a.X.t2 a.B.*" {
		t.Errorf("rerun patterns %q", p)
	}
	if p := rerunPatterns([]pyDifference{{id: "a.X.t2"}, {id: "test_m (run)"}}); p != nil {
		t.Errorf("rerun patterns for a run without report %q, want the whole module", p)
	}
	for pat, want := range map[string]string{
		"test.test_asyncio.test_events.*EventLoopTests.test_x": "test.test_asyncio.test_events",
		"test.test_epoll.TestEPoll.test_control_and_wait":      "test.test_epoll",
	} {
		if got := (pyExpected{pattern: pat}).module(); got != want {
			t.Errorf("module of %s: %q, want %q", pat, got, want)
		}
	}
}

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goxio/goxio/conf"
)

// TestRunProfilesMatchConf checks the front end's profile table against conf's: every name (in
// any case) and every VMA number conf accepts gives the same canonical VMA_SPEC, and an unknown
// profile lists exactly conf's names.
func TestRunProfilesMatchConf(t *testing.T) {
	var inputs []string
	for _, n := range conf.SpecNames() {
		inputs = append(inputs, n, strings.ToUpper(n))
	}
	inputs = append(inputs, " latency\t", "\r\n15\v") // surrounding blanks, as strings.TrimSpace
	for i := 0; i <= 1000; i++ {
		if _, err := conf.ParseSpec(strconv.Itoa(i)); err == nil {
			inputs = append(inputs, strconv.Itoa(i))
		}
	}
	for _, in := range inputs {
		want, _ := conf.ParseSpec(in)
		r := goxio(t, nil, "run", "-p", in, "--", tools.envC)
		expect(t, r, 0, []string{"VMA_SPEC=" + want + "\n"}, nil)
	}
	r := goxio(t, nil, "run", "-p", "warp", "--", tools.envC)
	expect(t, r, 2, nil, []string{`unknown profile "warp": want one of ` + strings.Join(conf.SpecNames(), ", ") + "\n"})
	// GOXIO_SPEC, which wins over VMA_SPEC in the engine, follows the profile when it is set.
	r = goxio(t, []string{"GOXIO_SPEC=none"}, "run", "-p", "latency", tools.envC)
	expect(t, r, 0, []string{"VMA_SPEC=latency\n"}, nil)
}

// TestRunPreloadList checks how the library joins an LD_PRELOAD the program already has: first,
// once, with the other items kept in order.
func TestRunPreloadList(t *testing.T) {
	lib := tools.lib
	cases := []struct{ old, want string }{
		{"", lib},
		{"/a.so", lib + ":/a.so"},
		{"/a.so /b.so", lib + ":/a.so:/b.so"},
		{"/a.so:" + lib, lib + ":/a.so"},
		{" : " + lib + " ", lib},
	}
	for _, c := range cases {
		// The loader warns on stderr about the missing /a.so; only the value matters here.
		r := goxio(t, []string{"LD_PRELOAD=" + c.old}, "run", "--", tools.envC)
		if got := lines(r.stdout)["LD_PRELOAD"]; got != c.want {
			t.Errorf("LD_PRELOAD=%q: program saw %q, want %q", c.old, got, c.want)
		}
	}
}

// TestRunFlags checks the flag forms Go's flag package accepts (the other commands'), a relative
// library path made absolute, and the usage errors.
func TestRunFlags(t *testing.T) {
	for _, args := range [][]string{{"-p=15"}, {"--p", "15"}, {"-p", "15", "-lib", tools.lib}, {"--lib=" + tools.lib, "-p", "latency"}} {
		r := goxio(t, nil, append(append([]string{"run"}, args...), tools.envC)...)
		expect(t, r, 0, []string{"VMA_SPEC=latency\n", "LD_PRELOAD=" + tools.lib + "\n"}, nil)
	}
	// A relative --lib, with . and .. in it, is made absolute without resolving links.
	cmd := exec.Command(tools.goxio, "run", "--lib", "./x/../"+filepath.Base(tools.lib), tools.envC)
	cmd.Dir = filepath.Dir(tools.lib)
	out, err := cmd.Output()
	if err != nil || lines(string(out))["LD_PRELOAD"] != tools.lib {
		t.Errorf("relative --lib: %v\n%s", err, out)
	}
	expect(t, goxio(t, nil, "run", "--frob", tools.envC), 2, nil, []string{"flag provided but not defined: --frob", "usage: goxio run"})
	expect(t, goxio(t, nil, "run", "-p"), 2, nil, []string{"flag needs an argument: -p"})
	expect(t, goxio(t, nil, "run", "-h"), 2, nil, []string{"usage: goxio run", "-lib string"})
	// A flag after the program is the program's.
	r := goxio(t, nil, "run", tools.envC, "-p")
	expect(t, r, 0, []string{"VMA_SPEC=(unset)"}, nil)
}

// TestFrontTool checks that the front end hands every other command to goxio-tool, and says so
// when the tool is missing; the tool itself refuses run.
func TestFrontTool(t *testing.T) {
	expect(t, goxio(t, nil, "version"), 0, []string{"goxio "}, nil)
	expect(t, goxio(t, nil, "nope"), 2, nil, []string{`goxio: unknown command "nope"`})

	dir := t.TempDir()
	alone := filepath.Join(dir, "goxio")
	b, err := os.ReadFile(tools.goxio)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(alone, "version")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 127 || !strings.Contains(string(out), "goxio-tool not found (looked at "+filepath.Join(dir, "goxio-tool")) {
		t.Errorf("front end without its tool: %v\n%s", err, out)
	}

	out, err = exec.Command(tools.tool, "run", "--", tools.envC).CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "use goxio run") {
		t.Errorf("goxio-tool run: %v\n%s", err, out)
	}
}

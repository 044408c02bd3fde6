package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tools are built once per test binary run.
var tools struct {
	dir    string // temporary folder
	goxio  string // the goxio command, with a stand-in libgoxio.so and goxio-bpf next to it
	tool   string // goxio-tool (this package) next to it
	lib    string
	envC   string // C program: prints LD_PRELOAD, VMA_SPEC and its pid, exits with argv[1]
	static string // the same, statically linked
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "goxio-cmd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := buildTools(dir); err != nil {
		fmt.Fprintf(os.Stderr, "build test tools: %v\n", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

func run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func buildTools(dir string) error {
	tools.dir = dir
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return err
	}
	// The layout of the build directory: the C front end as goxio, this tool next to it.
	tools.goxio = filepath.Join(bin, "goxio")
	if err := run("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-static", "-o", tools.goxio, "../goxio-front/goxio.c"); err != nil {
		return err
	}
	tools.tool = filepath.Join(bin, "goxio-tool")
	if err := run(goTool(), "build", "-tags", "netgo,osusergo", "-o", tools.tool, "."); err != nil {
		return err
	}
	// goxio capture's filter compiler, next to goxio as in the build directory; the tests that
	// call compileFilter in this process find it there too.
	bpfc := filepath.Join(bin, bpfHelper)
	if err := run(goTool(), "build", "-tags", "netgo,osusergo", "-o", bpfc, "../goxio-bpf"); err != nil {
		return err
	}
	findBPFHelper = func() (string, error) { return bpfc, nil }
	// A stand-in for the real library: any loadable shared object will do,
	// the tests only check that the program is started with it preloaded.
	libSrc := filepath.Join(dir, "lib.c")
	if err := os.WriteFile(libSrc, []byte("int goxio_test_stand_in = 1;\n"), 0o644); err != nil {
		return err
	}
	tools.lib = filepath.Join(bin, "libgoxio.so")
	if err := run("gcc", "-shared", "-fPIC", "-o", tools.lib, libSrc); err != nil {
		return err
	}
	if err := os.Link(tools.lib, filepath.Join(bin, "libgoxio-engine.so")); err != nil {
		return err
	}
	src := filepath.Join(dir, "env.c")
	prog := `#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
	const char *p = getenv("LD_PRELOAD"), *s = getenv("VMA_SPEC");
	printf("LD_PRELOAD=%s\nVMA_SPEC=%s\npid=%d\n", p ? p : "(unset)", s ? s : "(unset)", (int)getpid());
	return argc > 1 ? atoi(argv[1]) : 0;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		return err
	}
	tools.envC = filepath.Join(dir, "envc")
	if err := run("gcc", "-o", tools.envC, src); err != nil {
		return err
	}
	tools.static = filepath.Join(dir, "envc-static")
	return run("gcc", "-static", "-o", tools.static, src)
}

type result struct {
	stdout, stderr string
	code           int
	pid            int
}

// goxio runs the built command with env as its whole environment (plus PATH).
func goxio(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(tools.goxio, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start goxio: %v", err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("goxio %v did not finish in 60s", args)
	}
	r := result{stdout: out.String(), stderr: errb.String(), pid: cmd.Process.Pid}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("goxio %v: %v", args, err)
	}
	return r
}

func expect(t *testing.T, r result, code int, stdout, stderr []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stdout {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	for _, s := range stderr {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
		}
	}
}

func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVersionHelp(t *testing.T) {
	expect(t, goxio(t, nil, "version"), 0, []string{"goxio 0.1.0-dev (go"}, nil)
	expect(t, goxio(t, nil, "help"), 0, []string{"goxio run", "goxio rules check", "goxio params"}, nil)
	expect(t, goxio(t, nil), 2, nil, []string{"usage:"})
	expect(t, goxio(t, nil, "frobnicate"), 2, nil, []string{`goxio: unknown command "frobnicate"`})
	expect(t, goxio(t, nil, "rules"), 2, nil, []string{"usage: goxio rules check"})
	expect(t, goxio(t, nil, "rules", "lint"), 2, nil, []string{`unknown command "lint"`})
}

func TestRulesCheck(t *testing.T) {
	good := writeTemp(t, "good.conf", "application-id db2* *\nuse os tcp_server *:5001\napplication-id * *\nuse os udp_connect *:53\nuse os udp_sender *:53\n")
	r := goxio(t, nil, "rules", "check", good)
	expect(t, r, 0, []string{good + ": ok, 2 sections, 3 rules", "application-id db2* * (line 1): tcp_server 1",
		"application-id * * (line 3): udp_sender 1, udp_connect 1"}, nil)
	if r.stderr != "" {
		t.Errorf("stderr for a good file: %s", r.stderr)
	}

	bad := writeTemp(t, "bad.conf", "use os tcp_server *:1\nuse os tcp_srv *:2\n# fine\nuse os tcp_server *:70000\nuse os tcp_server *:3\n")
	r = goxio(t, nil, "rules", "check", bad)
	expect(t, r, 1, nil, []string{bad + `:2: use: unknown role "tcp_srv"`, bad + ":4: use: ports \"70000\"", "2 bad line(s)"})
	if n := strings.Count(r.stderr, bad+":"); n != 3 { // two errors and the summary
		t.Errorf("stderr has %d lines naming the file, want 3:\n%s", n, r.stderr)
	}

	// the shipped default file, and the default path from the environment
	expect(t, goxio(t, []string{"VMA_CONFIG_FILE=../../libvma.conf"}, "rules", "check"), 0,
		[]string{"../../libvma.conf: ok, 1 section, 5 rules"}, nil)
	expect(t, goxio(t, []string{"VMA_CONFIG_FILE=/nonexistent", "GOXIO_CONFIG_FILE=" + good}, "rules", "check"), 0,
		[]string{good + ": ok"}, nil)

	expect(t, goxio(t, nil, "rules", "check", filepath.Join(t.TempDir(), "missing.conf")), 1, nil,
		[]string{"goxio: load rules: open", "no such file"})

	// lint warnings do not fail the check
	shadow := writeTemp(t, "shadow.conf", "application-id * *\napplication-id db2 *\nuse os tcp_server *:1\n")
	expect(t, goxio(t, nil, "rules", "check", shadow), 0, []string{"ok, 2 sections"},
		[]string{shadow + ":2: warning: section `application-id db2 *` is never used"})
	expect(t, goxio(t, nil, "rules", "check", good, bad), 2, nil, []string{"usage"})

	// IPv6 addresses and prefixes in brackets
	six := writeTemp(t, "six.conf", "use os tcp_server [::1]:80\nuse os udp_receiver [fe80::]/10:*\nuse os tcp_server ::1:81\n")
	expect(t, goxio(t, nil, "rules", "check", six), 1, nil,
		[]string{six + `:3: use: address part "::1:81": an empty field or an IPv6 address without brackets; write IPv6 addresses as [::1]:80`,
			"1 bad line(s)"})
}

func TestRulesMatch(t *testing.T) {
	file := writeTemp(t, "m.conf", `application-id feed FH1
use os udp_receiver 239.1.1.1:*
application-id * *
use os udp_connect *:53
use os tcp_client 10.0.0.0/8:443:192.168.0.0/16:*
use vma tcp_server *:80
use os tcp_server [::1]:8080
`)
	cases := []struct {
		env  []string
		args []string
		want []string
	}{
		{nil, []string{"--app", "dig", "udp_connect", "8.8.8.8:53", file},
			[]string{"section: " + file + ":3 `application-id * *`", "rule:    " + file + ":4 `use os udp_connect *:53`", "result:  os"}},
		{nil, []string{"--app", "/usr/bin/feed", "--id", "FH1", "udp_receiver", "239.1.1.1:5000", file},
			[]string{"application id: FH1", "rule:    " + file + ":2", "result:  os"}},
		{[]string{"VMA_APPLICATION_ID=FH1"}, []string{"--app", "feed", "udp_receiver", "239.1.1.1:5000", file},
			[]string{"application id: FH1", "result:  os"}},
		{[]string{"VMA_APPLICATION_ID=FH1"}, []string{"--app", "feed", "--id", "", "udp_receiver", "239.1.1.1:5000", file},
			[]string{"application id: (none)", "rule:    no rule matched", "result:  vma"}},
		{nil, []string{"--app", "curl", "tcp_client", "10.1.2.3:443:192.168.7.7:40000", file},
			[]string{"local 192.168.7.7:40000, remote 10.1.2.3:443", "rule:    " + file + ":5", "result:  os"}},
		{nil, []string{"--app", "curl", "tcp_client", "10.1.2.3:443", file},
			[]string{"rule:    no rule matched", "result:  vma"}},
		{nil, []string{"--app", "srv", "tcp_server", "[::]:80", file},
			[]string{"rule:    " + file + ":6", "result:  vma"}},
		{nil, []string{"--app", "srv", "tcp_server", "[::1]:8080", file},
			[]string{"local [::1]:8080", "rule:    " + file + ":7 `use os tcp_server [::1]:8080`", "result:  os"}},
		{nil, []string{"--app", "srv", "tcp_server", "127.0.0.1:8080", file}, // ::1 is not 127.0.0.1 for an IPv6 rule
			[]string{"rule:    no rule matched", "result:  vma"}},
		{nil, []string{"--app", "curl", "tcp_client", "[::ffff:10.1.2.3]:443:[::ffff:192.168.7.7]:40000", file},
			[]string{"rule:    " + file + ":5", "result:  os"}},
		{[]string{"GOXIO_CONFIG_FILE=" + file}, []string{"--app", "dig", "udp_connect", "1.1.1.1:53"},
			[]string{"result:  os"}},
		{nil, []string{"--app", "x", "udp_sender", "1.1.1.1:53", filepath.Join(t.TempDir(), "none.conf")},
			[]string{"section: none", "result:  vma"}},
	}
	for _, c := range cases {
		expect(t, goxio(t, c.env, append([]string{"rules", "match"}, c.args...)...), 0, c.want, nil)
	}
	usage := [][]string{
		{"udp_sender", "1.1.1.1:53", file},                             // no --app
		{"--app", "x", "udp_sender"},                                   // no address
		{"--app", "x", "udp_talker", "1.1.1.1:53"},                     // bad role
		{"--app", "x", "udp_sender", "1.1.1.1"},                        // no port
		{"--app", "x", "udp_sender", "1.1.1.1:70000"},                  // bad port
		{"--app", "x", "udp_sender", "1.1.1.1:53:2.2.2.2:1"},           // two addresses for a one-address role
		{"--app", "x", "tcp_client", "1.1.1.1:53:2.2.2.2:1:3.3.3.3:4"}, // three addresses
		{"--app", "x", "tcp_client", "1.1.1.1:53:"},                    // trailing colon
		{"--app", "x", "tcp_client", "1.1.1.1:53", file, "extra"},      // too many arguments
		{"--app", "x", "--bogus", "tcp_client", "1.1.1.1:53"},          // unknown flag
	}
	for _, args := range usage {
		r := goxio(t, nil, append([]string{"rules", "match"}, args...)...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("rules match %q: exit %d, stderr %q; want 2 and a message", args, r.code, r.stderr)
		}
	}
}

func TestParams(t *testing.T) {
	r := goxio(t, nil, "params")
	expect(t, r, 0, []string{"VMA_TRACELEVEL = INFO  [default; values", "VMA_RX_POLL = 100000  [default; values -1..100000000]",
		"    Times a blocking receive polls"}, nil)
	if n := strings.Count(r.stdout, "\nVMA_") + 1; n < 40 {
		t.Errorf("params lists %d parameters", n)
	}
	r = goxio(t, []string{"VMA_SPEC=latency", "GOXIO_RX_POLL=7"}, "params")
	expect(t, r, 0, []string{"VMA_RX_POLL = 7  [env GOXIO_RX_POLL; default 100000;", "VMA_TX_WRE = 256  [spec latency; default 2048;"}, nil)

	r = goxio(t, []string{"VMA_SPEC=latency", "GOXIO_RX_POLL=7"}, "params", "--env")
	expect(t, r, 0, []string{"VMA_SPEC=latency # env VMA_SPEC\n", "VMA_RX_POLL=7 # env GOXIO_RX_POLL\n", "VMA_TX_WRE=256 # spec latency\n"}, nil)
	if strings.Contains(r.stdout, "VMA_LOG_COLORS") {
		t.Errorf("--env lists a default parameter:\n%s", r.stdout)
	}
	expect(t, goxio(t, nil, "params", "--env"), 0, nil, nil)

	file := writeTemp(t, "p.toml", "VMA_TCP_NODELAY = true\nVMA_STATS_SHMEM_DIR = \"\"\nVMA_RX_POLL = \"fast\"\n")
	r = goxio(t, []string{"GOXIO_PARAMS_FILE=" + file, "VMA_THREAD_MODE=9"}, "params", "--env")
	expect(t, r, 1, []string{"VMA_TCP_NODELAY=1 # file " + file, "VMA_STATS_SHMEM_DIR='' # file " + file},
		[]string{"goxio: warning: " + file + `:3: VMA_RX_POLL "fast"`, "goxio: warning: env VMA_THREAD_MODE: VMA_THREAD_MODE \"9\": out of range 0..3"})
	expect(t, goxio(t, nil, "params", "extra"), 2, nil, []string{"usage: goxio params"})
}

func lines(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

func TestRun(t *testing.T) {
	// The library next to goxio is preloaded; the program keeps goxio's pid.
	r := goxio(t, nil, "run", "--", tools.envC)
	expect(t, r, 0, []string{"LD_PRELOAD=" + tools.lib + "\n", "VMA_SPEC=(unset)"}, nil)
	if got := lines(r.stdout)["pid"]; got != strconv.Itoa(r.pid) {
		t.Errorf("program pid %s, goxio's pid %d: not exec'd in place", got, r.pid)
	}
	if r.stderr != "" {
		t.Errorf("stderr for a dynamic C program: %s", r.stderr)
	}

	// The engine the library would load is missing: said, still run.
	r = goxio(t, []string{"GOXIO_ENGINE=" + filepath.Join(tools.dir, "none.so")}, "run", "--", tools.envC)
	expect(t, r, 0, []string{"LD_PRELOAD=" + tools.lib + "\n"}, []string{"goxio: run: the engine " + filepath.Join(tools.dir, "none.so") + " is missing"})

	// Prepended to an existing LD_PRELOAD, without duplicating itself.
	other := filepath.Join(tools.dir, "other.so")
	_ = os.Remove(other) // the tools folder outlives a run of -count=N
	if err := os.Link(tools.lib, other); err != nil {
		t.Fatal(err)
	}
	r = goxio(t, []string{"LD_PRELOAD=" + other + " " + tools.lib}, "run", tools.envC)
	expect(t, r, 0, []string{"LD_PRELOAD=" + tools.lib + ":" + other + "\n"}, nil)

	// A profile sets VMA_SPEC (numbers are VMA's aliases); the exit status is the program's.
	r = goxio(t, []string{"VMA_SPEC=none"}, "run", "-p", "15", "--", tools.envC, "3")
	expect(t, r, 3, []string{"VMA_SPEC=latency\n"}, nil)
	expect(t, goxio(t, nil, "run", "-p", "warp", "--", tools.envC), 2, nil, []string{`unknown profile "warp"`})

	// Library choice: --lib, then GOXIO_LIB.
	alt := filepath.Join(tools.dir, "alt", "libgoxio.so")
	if err := os.MkdirAll(filepath.Dir(alt), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(alt)
	if err := os.Link(tools.lib, alt); err != nil {
		t.Fatal(err)
	}
	expect(t, goxio(t, []string{"GOXIO_LIB=" + alt}, "run", tools.envC), 0, []string{"LD_PRELOAD=" + alt + "\n"}, nil)
	expect(t, goxio(t, []string{"GOXIO_LIB=" + alt}, "run", "--lib", tools.lib, tools.envC), 0, []string{"LD_PRELOAD=" + tools.lib + "\n"}, nil)
	expect(t, goxio(t, nil, "run", "--lib", filepath.Join(tools.dir, "nope.so"), tools.envC), 1, nil, []string{"goxio: run: library:"})

	// A command found through PATH.
	r = goxio(t, nil, "run", "true")
	expect(t, r, 0, nil, nil)
	expect(t, goxio(t, nil, "run", "no-such-program-goxio"), 127, nil, []string{"goxio: run:", "no-such-program-goxio"})
	expect(t, goxio(t, nil, "run"), 2, nil, []string{"usage: goxio run"})

	// A script runs without a message.
	script := writeTemp(t, "s.sh", "#!/bin/sh\necho \"script LD_PRELOAD=$LD_PRELOAD\"\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	r = goxio(t, nil, "run", script)
	expect(t, r, 0, []string{"script LD_PRELOAD=" + tools.lib}, nil)
	if r.stderr != "" {
		t.Errorf("stderr for a script: %s", r.stderr)
	}
}

func TestRunNotAccelerated(t *testing.T) {
	// A static program: said once, still run.
	r := goxio(t, nil, "run", tools.static, "4")
	expect(t, r, 4, []string{"LD_PRELOAD=" + tools.lib}, []string{"goxio: " + tools.static + " is statically linked"})
	if strings.Count(r.stderr, "goxio:") != 1 {
		t.Errorf("stderr has more than one message:\n%s", r.stderr)
	}

	// Go programs, static and dynamic (PIE): said once, still run.
	src := writeTemp(t, "main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n")
	dir := filepath.Dir(src)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	staticGo, pieGo := filepath.Join(dir, "hello-static"), filepath.Join(dir, "hello-pie")
	build := func(out string, args ...string) {
		cmd := exec.Command(goTool(), append(append([]string{"build", "-o", out}, args...), ".")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
	}
	build(staticGo)
	build(pieGo, "-buildmode=pie")
	r = goxio(t, nil, "run", staticGo)
	expect(t, r, 0, []string{"hello from go"}, []string{"goxio: " + staticGo + " is a statically linked Go program"})
	r = goxio(t, nil, "run", pieGo)
	expect(t, r, 0, []string{"hello from go"}, []string{"goxio: " + pieGo + " is a Go program: Go does not call libc for sockets"})
	if strings.Count(r.stderr, "goxio:") != 1 {
		t.Errorf("stderr has more than one message:\n%s", r.stderr)
	}
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/goxio/goxio/conf"
)

// libName is the file name of the preload library.
const libName = "libgoxio.so"

// engineName is the file name of the engine, which the preload library loads from its own
// directory (or from $GOXIO_ENGINE) when a process first needs it.
const engineName = "libgoxio-engine.so"

// installedLibs are the places a packaged or `make install`ed library lives.
var installedLibs = []string{"/usr/local/lib/" + libName, "/usr/lib/" + libName}

// runCmd implements `goxio run`: it prepends the library to LD_PRELOAD, sets
// VMA_SPEC when a profile is given, says once when the program cannot be
// accelerated, and execs the program (same pid, same signals).
func runCmd(args []string, stderr io.Writer, environ []string) int {
	fs := flag.NewFlagSet("goxio run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("p", "", "VMA_SPEC profile for the program (latency, multi_ring_latency, ...)")
	lib := fs.String("lib", "", "path of libgoxio.so (default: $GOXIO_LIB, next to goxio, ../lib, /usr/local/lib, /usr/lib)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: goxio run [-p PROFILE] [--lib PATH] -- COMMAND [ARG...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	env := newEnv(environ)

	if *profile != "" {
		name, err := conf.ParseSpec(*profile)
		if err != nil {
			fmt.Fprintf(stderr, "goxio: run: unknown profile %q: want one of %s\n", *profile, strings.Join(conf.SpecNames(), ", "))
			return 2
		}
		env.set("VMA_SPEC", name)
		if _, ok := env.get("GOXIO_SPEC"); ok {
			env.set("GOXIO_SPEC", name) // it would win over VMA_SPEC
		}
	}

	libPath := *lib
	if libPath == "" {
		var tried []string
		libPath, tried = findLibrary(env)
		if libPath == "" {
			fmt.Fprintf(stderr, "goxio: run: %s not found (looked at %s); set GOXIO_LIB or use --lib\n", libName, strings.Join(tried, ", "))
			return 1
		}
	}
	if abs, err := filepath.Abs(libPath); err == nil {
		libPath = abs
	}
	if _, err := os.Stat(libPath); err != nil {
		fmt.Fprintf(stderr, "goxio: run: library: %v\n", err)
		return 1
	}
	if msg := checkEngine(env, libPath); msg != "" {
		fmt.Fprintf(stderr, "goxio: run: %s\n", msg)
	}
	old, _ := env.get("LD_PRELOAD")
	env.set("LD_PRELOAD", prependPreload(libPath, old))

	prog := fs.Arg(0)
	path, err := exec.LookPath(prog)
	if err != nil {
		fmt.Fprintf(stderr, "goxio: run: %v\n", err)
		return 127
	}
	if msg := checkProgram(path, libPath); msg != "" {
		fmt.Fprintf(stderr, "goxio: %s\n", msg)
	}
	err = syscall.Exec(path, fs.Args(), env.list())
	fmt.Fprintf(stderr, "goxio: run: exec %s: %v\n", path, err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

// findLibrary looks for the library: $GOXIO_LIB, next to the goxio binary,
// in ../lib relative to it, then in the installed places. It returns the
// first that exists and every place it looked.
func findLibrary(env *environment) (string, []string) {
	var cands []string
	if p, ok := env.get("GOXIO_LIB"); ok && p != "" {
		cands = append(cands, p)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir := filepath.Dir(exe)
		cands = append(cands, filepath.Join(dir, libName), filepath.Join(dir, "..", "lib", libName))
	}
	cands = append(cands, installedLibs...)
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return c, cands
		}
	}
	return "", cands
}

// checkEngine says what is wrong when the engine the library will load is missing: $GOXIO_ENGINE
// if set, else libgoxio-engine.so next to the library. Without it, the program runs with every
// call going to the kernel.
func checkEngine(env *environment, libPath string) string {
	eng, ok := env.get("GOXIO_ENGINE")
	if !ok || eng == "" {
		eng = filepath.Join(filepath.Dir(libPath), engineName)
	}
	if st, err := os.Stat(eng); err != nil || !st.Mode().IsRegular() {
		return "the engine " + eng + " is missing: the program's sockets will all go to the kernel"
	}
	return ""
}

// prependPreload puts lib first in an LD_PRELOAD value (whose items are
// separated by colons or blanks), removing any other occurrence of it.
func prependPreload(lib, old string) string {
	items := []string{lib}
	for _, it := range strings.FieldsFunc(old, func(r rune) bool { return r == ':' || r == ' ' || r == '\t' }) {
		if it != lib {
			items = append(items, it)
		}
	}
	return strings.Join(items, ":")
}

// environment is an ordered environment list that can be edited by name.
type environment struct{ kv []string }

func newEnv(environ []string) *environment {
	return &environment{kv: append([]string(nil), environ...)}
}

func (e *environment) get(name string) (string, bool) {
	for _, kv := range e.kv {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// set replaces every occurrence of name, or appends it.
func (e *environment) set(name, value string) {
	out := e.kv[:0]
	done := false
	for _, kv := range e.kv {
		if k, _, ok := strings.Cut(kv, "="); ok && k == name {
			if done {
				continue
			}
			kv, done = name+"="+value, true
		}
		out = append(out, kv)
	}
	if !done {
		out = append(out, name+"="+value)
	}
	e.kv = out
}

func (e *environment) list() []string { return e.kv }

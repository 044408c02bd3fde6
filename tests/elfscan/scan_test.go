package elfscan

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (the project's setup installs it)", path, err)
	}
	return b
}

// TestScanPrograms reads real programs and libraries of the system the way exec.c does.
func TestScanPrograms(t *testing.T) {
	for _, c := range []struct {
		path     string
		how      int
		keep     bool
		why      string // part of the reason, when kept
		needSome string // one needed library, when not kept
	}{
		{"/usr/bin/cat", Exe, false, "", "libc.so.6"},
		{"/usr/bin/date", Exe, false, "", "libc.so.6"},
		{"/usr/bin/env", Exe, true, "execvp", ""},
		{"/usr/bin/curl", Exe, false, "", "libcurl.so.4"}, // curl's sockets are libcurl's
		{"/usr/lib/x86_64-linux-gnu/libcurl.so.4", 0, true, "", ""},
		{"/lib/x86_64-linux-gnu/libselinux.so.1", 0, true, "", ""},
		{"/lib/x86_64-linux-gnu/libselinux.so.1", NeedsOnly, false, "", "libpcre2-8.so.0"},
		{"/usr/bin/cat", 0, false, "", "libc.so.6"}, // a PIE program read as a library
		{"/etc/passwd", Exe, true, "not an ELF file", ""},
	} {
		keep, why, needed := Scan(read(t, c.path), c.how)
		if keep != c.keep || !strings.Contains(why, c.why) {
			t.Errorf("%s (how %d): keep %v (%q), want %v (%q)", c.path, c.how, keep, why, c.keep, c.why)
		}
		if !keep && !slices.Contains(needed, c.needSome) {
			t.Errorf("%s: needed %v, want %s among them", c.path, needed, c.needSome)
		}
	}

	dir := t.TempDir()
	script := filepath.Join(dir, "s.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrue\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if keep, why, _ := Scan(read(t, script), Exe); !keep || !strings.Contains(why, "script") {
		t.Errorf("script: keep %v (%q), want kept as a script", keep, why)
	}
	src := filepath.Join(dir, "s.c")
	if err := os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	static := filepath.Join(dir, "static")
	if out, err := exec.Command("gcc", "-static", "-o", static, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc -static: %v\n%s", err, out)
	}
	if keep, why, _ := Scan(read(t, static), Exe); !keep || !strings.Contains(why, "statically linked") {
		t.Errorf("static program: keep %v (%q), want kept as statically linked", keep, why)
	}
	// Every truncation of a real program is either read whole or refused, never read past.
	cat := read(t, "/usr/bin/cat")
	for n := 0; n < len(cat); n += 61 {
		if keep, _, _ := Scan(cat[:n], Exe); !keep {
			t.Errorf("cat truncated to %d bytes: read as a whole program", n)
		}
	}
}

// TestLdCache finds libraries in this system's /etc/ld.so.cache as the loader does.
func TestLdCache(t *testing.T) {
	cache := read(t, "/etc/ld.so.cache")
	paths, n := LdCache(cache, "libc.so.6")
	if n < 1 || len(paths) != n || !strings.HasSuffix(paths[0], "/libc.so.6") {
		t.Fatalf("libc.so.6: %v (%d), want its path", paths, n)
	}
	if _, err := os.Stat(paths[0]); err != nil {
		t.Errorf("libc.so.6 at %s: %v", paths[0], err)
	}
	if paths, n := LdCache(cache, "libnothing-here.so.9"); n != 0 || len(paths) != 0 {
		t.Errorf("unknown library: %v (%d), want none", paths, n)
	}
	if _, n := LdCache(cache[:30], "libc.so.6"); n != -1 {
		t.Errorf("truncated cache: %d, want -1", n)
	}
	if _, n := LdCache([]byte("ld.so-1.7.0 old format"), "libc.so.6"); n != -1 {
		t.Errorf("old format: %d, want -1", n)
	}
}

// FuzzScan: any bytes are read or refused, never read past (the C side reads a C copy of
// exactly the fuzzer's bytes); an object read whole starts like an ELF file.
func FuzzScan(f *testing.F) {
	for _, p := range []string{"/usr/bin/cat", "/usr/bin/env"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, uint8(Exe))
		}
	}
	f.Add([]byte("#!/bin/sh\n"), uint8(Exe))
	f.Add([]byte("\x7fELF\x02\x01\x01"), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, how uint8) {
		keep, why, _ := Scan(b, int(how&3))
		if !keep && !bytes.HasPrefix(b, []byte("\x7fELF")) {
			t.Fatalf("read whole without an ELF header")
		}
		if keep && why == "" {
			t.Fatalf("kept without a reason")
		}
	})
}

// FuzzLdCache: any bytes as /etc/ld.so.cache are understood or refused, never read past.
func FuzzLdCache(f *testing.F) {
	if b, err := os.ReadFile("/etc/ld.so.cache"); err == nil {
		f.Add(b, "libc.so.6")
	}
	f.Add([]byte("glibc-ld.so.cache1.1"), "x")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		if strings.IndexByte(name, 0) >= 0 {
			return
		}
		paths, n := LdCache(b, name)
		if n >= 0 && len(paths) != n {
			t.Fatalf("%d paths reported, %d given", n, len(paths))
		}
	})
}

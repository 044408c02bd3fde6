package conf

import (
	"strings"
	"testing"
)

// FuzzParams feeds arbitrary values to every parameter, from the environment
// and from a parameters file, and checks that Load never panics, that a
// rejected value leaves the default and names its source, and that an
// accepted value formats to a string that parses back to itself.
func FuzzParams(f *testing.F) {
	seeds := []struct {
		idx   uint8
		value string
		file  string
	}{
		{0, "debug", ""},
		{0, "FUNC_ALL", "VMA_TRACELEVEL = 4"},
		{10, "-1", "VMA_RX_POLL = -1\n"},
		{10, "abc", "VMA_RX_POLL = \"x\""},
		{10, " 42 ", "[t]\nx=1"},
		{6, "latency", "VMA_SPEC = 15"},
		{6, "multi_ring_latency", "GOXIO_SPEC = 'nope'"},
		{3, "yes", "VMA_LOG_COLORS = true\nGOXIO_LOG_COLORS = 0"},
		{1, "/tmp/x.%d.log", "VMA_LOG_FILE = 3.5"},
		{42, "0x3", "VMA_INTERNAL_THREAD_AFFINITY = \"0,2-3\""},
		{36, "-2", "VMA_THREAD_MODE = [1]"},
		{255, "", "= 1"},
	}
	for _, s := range seeds {
		f.Add(s.idx, s.value, s.file)
	}
	def := Defaults()
	f.Fuzz(func(t *testing.T, idx uint8, value, file string) {
		i := int(idx) % len(params)
		pr := &params[i]

		// Direct parsing: accepted values are stable under format/parse.
		p := Defaults()
		if err := pr.set(&p, value); err == nil {
			once := pr.format(&p)
			q := Defaults()
			if err := pr.set(&q, once); err != nil || pr.format(&q) != once {
				t.Fatalf("%s: %q formats as %q, which parses to %q (%v)", pr.name, value, once, pr.format(&q), err)
			}
		} else if pr.format(&p) != pr.format(&def) {
			t.Fatalf("%s: rejected %q but changed the value to %q", pr.name, value, pr.format(&p))
		}

		// Through the environment, in both spellings.
		for _, name := range []string{pr.name, "GOXIO_" + strings.TrimPrefix(pr.name, "VMA_")} {
			if strings.ContainsRune(value, 0) {
				break
			}
			got, ws := Load([]string{name + "=" + value})
			for _, w := range ws {
				if w.Source != "env "+name {
					t.Fatalf("warning %v does not name env %s", w, name)
				}
			}
			if len(ws) > 0 && pr.format(&got) != pr.format(&def) {
				t.Fatalf("%s=%q warned but set %q", name, value, pr.format(&got))
			}
			if len(ws) == 0 && pr.name != "VMA_SPEC" && pr.name != "VMA_TRACELEVEL" {
				want := Defaults()
				_ = pr.set(&want, value)
				if pr.format(&got) != pr.format(&want) {
					t.Fatalf("%s=%q: Load gives %q, parsing gives %q", name, value, pr.format(&got), pr.format(&want))
				}
			}
		}

		// Through a parameters file: never a panic; every warning names the file.
		as, ws := parseParamsFile("f.toml", file)
		for _, w := range ws {
			if !strings.HasPrefix(w.Source, "f.toml") {
				t.Fatalf("file warning %v does not name the file", w)
			}
		}
		for _, a := range as {
			if a.idx < 0 || a.idx >= len(params) || a.source != "file f.toml" {
				t.Fatalf("bad assignment %+v", a)
			}
		}
	})
}

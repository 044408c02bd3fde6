package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseTuple(t *testing.T) {
	good := map[string]string{
		"1.2.3.4:80":                    "1.2.3.4:80",
		"1.2.3.4:80:10.0.0.1:0":         "1.2.3.4:80 10.0.0.1:0",
		"[::1]:53":                      "[::1]:53",
		"[2001:db8::1]:1:1.1.1.1:2":     "[2001:db8::1]:1 1.1.1.1:2",
		"1.1.1.1:1:2.2.2.2:2:3.3.3.3:3": "1.1.1.1:1 2.2.2.2:2 3.3.3.3:3",
	}
	for in, want := range good {
		eps, err := parseTuple(in)
		var got []string
		for _, e := range eps {
			got = append(got, e.String())
		}
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("parseTuple(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1.1.1.1", "1.1.1.1:", "1.1.1.1:x", "1.1.1.1:65536", "1.1.1.1:80:", "host:80", "[::1]", "[::1:80", "[::1]80", ":80"} {
		if eps, err := parseTuple(in); err == nil {
			t.Errorf("parseTuple(%q) = %v, want an error", in, eps)
		}
	}
}

func TestShellQuote(t *testing.T) {
	cases := map[string]string{"": "''", "abc": "abc", "/tmp/x.%d.log": "/tmp/x.%d.log", "a b": "'a b'", "it's": `'it'\''s'`, "$HOME": "'$HOME'"}
	for in, want := range cases {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCLIInProcess(t *testing.T) {
	var out, errb bytes.Buffer
	if code := cli([]string{"rules", "match", "--app", "x", "udp_sender", "1.1.1.1:53", "../../libvma.conf"}, &out, &errb, nil); code != 0 ||
		!strings.Contains(out.String(), "result:  os") {
		t.Errorf("cli rules match: %d\n%s%s", code, out.String(), errb.String())
	}
}

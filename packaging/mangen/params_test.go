package main

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/goxio/goxio/conf"
)

const pagePath = "../man/libgoxio.7"

// TestPageUpToDate fails when the committed libgoxio(7) does not document the
// parameters the code defines.
func TestPageUpToDate(t *testing.T) {
	page, err := os.ReadFile(pagePath)
	if err != nil {
		t.Fatalf("read %s: %v", pagePath, err)
	}
	want, err := regenerate(page)
	if err != nil {
		t.Fatalf("regenerate: %v", err)
	}
	if string(want) != string(page) {
		t.Fatalf("%s is out of date with conf.ParamInfos: run `go run ./packaging/mangen -w packaging/man/libgoxio.7`", pagePath)
	}
}

// TestEveryParameterDocumented checks the generated text names every
// parameter and profile, with its escaped default.
func TestEveryParameterDocumented(t *testing.T) {
	got := paramsRoff()
	for _, p := range conf.ParamInfos() {
		if !strings.Contains(got, ".B "+text(p.Name)+"\n") {
			t.Errorf("parameter %s missing", p.Name)
		}
		def := p.Default
		if def == "" {
			def = "empty"
		}
		if !strings.Contains(got, "Default: "+text(def)+".\n") {
			t.Errorf("default %q of %s missing", def, p.Name)
		}
	}
	for _, s := range conf.SpecNames() {
		if !strings.Contains(got, ".B "+text(s)+"\n") {
			t.Errorf("profile %s missing", s)
		}
	}
}

func TestRegenerateNeedsMarkers(t *testing.T) {
	for _, page := range []string{
		"no markers\n",
		endMarker + "\n" + beginMarker + "\n",
		beginMarker + "\n",
	} {
		if _, err := regenerate([]byte(page)); !errors.Is(err, errNoMarkers) {
			t.Errorf("regenerate(%q) error = %v, want errNoMarkers", page, err)
		}
	}
}

func TestRegenerateKeepsTheRest(t *testing.T) {
	page := "head\n" + beginMarker + "\nstale\n" + endMarker + "\ntail\n"
	out, err := regenerate([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.HasPrefix(s, "head\n"+beginMarker+"\n") || !strings.HasSuffix(s, endMarker+"\ntail\n") {
		t.Errorf("surrounding text changed:\n%s", s)
	}
	if strings.Contains(s, "stale") {
		t.Errorf("old generated text kept:\n%s", s)
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"-1..3":      `\-1..3`,
		`a\b`:        `a\eb`,
		".starts":    `\&.starts`,
		"'quoted'":   `\&'quoted'`,
		"plain text": "plain text",
	} {
		if got := text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
}

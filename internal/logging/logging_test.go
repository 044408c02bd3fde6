package logging

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/goxio/goxio/conf"
)

type lines struct{ b strings.Builder }

func (l *lines) Write(p []byte) (int, error) { return l.b.Write(p) }
func (l *lines) Sync() error                 { return nil }

func TestLevelMappingRoundTrips(t *testing.T) {
	for l := conf.LevelNone; l <= conf.LevelFiner; l++ {
		if got := VMALevel(ZapLevel(l)); got != l {
			t.Errorf("VMALevel(ZapLevel(%v)) = %v", l, got)
		}
	}
	if ZapLevel(conf.LevelInfo) != zapcore.InfoLevel || ZapLevel(conf.LevelDetails) != Details ||
		ZapLevel(conf.LevelDebug) != Debug || ZapLevel(conf.LevelWarning) != zapcore.WarnLevel {
		t.Fatal("VMA levels do not map onto goxio's zap levels")
	}
}

func TestLevelsFilterAndName(t *testing.T) {
	var out lines
	log, h := New(Config{Level: conf.LevelWarning}, &out)
	log.Info("hidden")
	log.Warn("shown", zap.Int("fd", 5))
	h.SetLevel(conf.LevelDebug)
	log.Log(Debug, "debug line")
	log.Log(Fine, "too fine")
	h.SetLevel(conf.LevelNone)
	log.Error("nothing at NONE")
	got := out.b.String()
	want := "goxio WARNING: shown {\"fd\": 5}\ngoxio DEBUG: debug line\n"
	if got != want {
		t.Fatalf("log output\n%q\nwant\n%q", got, want)
	}
	if h.Level() != conf.LevelNone {
		t.Fatalf("Level() = %v", h.Level())
	}
}

func TestDetailsPrefixes(t *testing.T) {
	prefixTime = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC) }
	defer func() { prefixTime = time.Now }()
	var out lines
	log, h := New(Config{Level: conf.LevelInfo, Details: 1}, &out)
	log.Info("a")
	h.SetDetails(3)
	log.Info("b")
	re := regexp.MustCompile(`^Tid:\d+ goxio INFO: a\n03:04:05\.000006 Pid:` + strconv.Itoa(os.Getpid()) + ` Tid:\d+ goxio INFO: b\n$`)
	if !re.MatchString(out.b.String()) {
		t.Fatalf("prefixes: %q", out.b.String())
	}
}

func TestFDWriterWholeLinesAndClosedFD(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	w := FDWriter{FD: func() int { return fd }}
	if n, err := w.Write([]byte("line one\n")); n != 9 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	fd = -1 // the library lost its fd: lines are dropped, not written elsewhere
	if n, err := w.Write([]byte("dropped\n")); n != 8 || err != nil {
		t.Fatalf("write without fd = %d, %v", n, err)
	}
	b, _ := os.ReadFile(f.Name())
	if string(b) != "line one\n" {
		t.Fatalf("file holds %q", b)
	}
	if LogFilePath("/tmp/goxio.%d.log", 42) != "/tmp/goxio.42.log" {
		t.Fatal("the pid placeholder was not expanded")
	}
}

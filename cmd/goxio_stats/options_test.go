package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goxio/goxio/stats"
)

func TestParseOptions(t *testing.T) {
	t.Setenv("VMA_STATS_SHMEM_DIR", "/dev/shm")
	t.Setenv("GOXIO_STATS_SHMEM_DIR", "")
	o, err := parseOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.dir != "/dev/shm" || o.view != viewBasic || o.details != detailsTotals || o.cycles != 0 ||
		o.interval != time.Second || o.fdDump != -2 || o.logLevel != noLevel || o.logDetails != -1 {
		t.Errorf("defaults %+v", o)
	}
	o, err = parseOptions([]string{"-p", "12", "-k/tmp/x", "-Fz", "--view=3", "--details", "2", "-i", "0.5",
		"-c3", "-l", "debug", "-D", "2", "-s", "4-6,9", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	if o.pid != 12 || o.dir != "/tmp/x" || !o.forbidClean || !o.zero || o.view != 3 || o.details != 2 ||
		o.interval != 500*time.Millisecond || o.cycles != 3 || o.logLevel != stats.LogDebug || o.logDetails != 2 || !o.json {
		t.Errorf("parsed %+v", o)
	}
	for fd, want := range map[int]bool{3: false, 4: true, 5: true, 6: true, 7: false, 9: true} {
		if o.sockets.has(fd) != want {
			t.Errorf("-s 4-6,9 has(%d) = %v", fd, !want)
		}
	}
	o, err = parseOptions([]string{"-S", "5", "fine", "-Z"})
	if err != nil || o.fdDump != 5 || o.fdDumpLevel != stats.LogFine || !o.zero {
		t.Errorf("-S 5 fine -Z: %+v %v", o, err)
	}
	o, err = parseOptions([]string{"--fd_dump=0", "-V"})
	if err != nil || o.fdDump != 0 || o.fdDumpLevel != stats.LogInfo || !o.version {
		t.Errorf("--fd_dump=0: %+v %v", o, err)
	}
	o, err = parseOptions([]string{"--prometheus"})
	if err != nil || o.cycles != 1 {
		t.Errorf("--prometheus cycles %d %v", o.cycles, err)
	}
	o, err = parseOptions([]string{"-l", "3", "-n", "app", "-f"})
	if err != nil || o.logLevel != 3 || o.name != "" {
		t.Errorf("-l 3 -n app -f: %+v %v", o, err)
	}

	for _, bad := range [][]string{{"-v", "6"}, {"-v", "0"}, {"-d", "3"}, {"-p"}, {"-p", "x"}, {"-q"},
		{"--nope"}, {"-i", "0"}, {"-c", "-1"}, {"-l", "loud"}, {"-D", "4"}, {"-s", "a-b"},
		{"-S", "5", "loud"}, {"stray"}, {"--json", "--prometheus"}, {"--zero=1"}, {"--ack_timeout", "x"}} {
		if _, err := parseOptions(bad); !errors.Is(err, errUsage) {
			t.Errorf("parseOptions(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestLogLevelNames(t *testing.T) {
	for i := stats.LogNone; i <= stats.LogAll; i++ {
		l, ok := parseLogLevel(logLevelName(i))
		if !ok || l != i {
			t.Errorf("level %d: name %q parses to %d %v", i, logLevelName(i), l, ok)
		}
	}
	if l, ok := parseLogLevel("WARNING"); !ok || l != stats.LogWarn {
		t.Errorf("WARNING: %d %v", l, ok)
	}
}

func TestPrometheusEscaping(t *testing.T) {
	if got := labels("a", "x\"y\\z\nw"); got != `a="x\"y\\z\nw"` {
		t.Errorf("labels = %s", got)
	}
	out := prometheusText([]procView{{pid: 7, name: "p", snap: &stats.Snapshot{}}})
	if !strings.Contains(out, "# TYPE goxio_sockets_open gauge\ngoxio_sockets_open{pid=\"7\",program=\"p\"} 0\n") {
		t.Errorf("exposition:\n%s", out)
	}
	if strings.Count(out, "# HELP goxio_process_info") != 1 {
		t.Errorf("HELP repeated:\n%s", out)
	}
}

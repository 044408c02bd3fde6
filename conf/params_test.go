package conf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func warnsString(ws []Warning) string {
	var b []string
	for _, w := range ws {
		b = append(b, w.Error())
	}
	return strings.Join(b, "\n")
}

func loadOK(t *testing.T, environ ...string) Params {
	t.Helper()
	p, ws := Load(environ)
	if len(ws) != 0 {
		t.Fatalf("Load(%q) warnings:\n%s", environ, warnsString(ws))
	}
	return p
}

func TestDefaults(t *testing.T) {
	p := loadOK(t)
	d := Defaults()
	if p.TraceLevel != LevelInfo || p.RxPoll != 100000 || p.SelectPoll != 100000 || p.SelectPollOSRatio != 10 ||
		p.SelectSkipOS != 4 || p.RxUDPPollOSRatio != 100 || p.RxBytesMin != 65536 || p.StatsFDNum != 100 ||
		p.StatsShmemDir != "/tmp/" || p.ConfigFile != "/etc/libvma.conf" || p.AppID != "" || p.SpecName != "none" ||
		!p.LogColors || !p.CloseOnDup2 || !p.OffloadedSockets || p.TCPNodelay || p.ThreadMode != ThreadMulti ||
		p.ExceptionHandling != ExceptionDebug || p.ProgressEngineInterval != 10 || p.MTU != 0 || p.TxNonblockedEagains {
		t.Errorf("defaults differ from VMA's: %+v", p)
	}
	if got := p.NonDefault(); len(got) != 0 {
		t.Errorf("NonDefault of defaults = %v", got)
	}
	for _, s := range d.All() {
		if s.Source != "default" {
			t.Errorf("%s source %q", s.Name, s.Source)
		}
	}
}

// TestParamTable checks every parameter is documented, accepts its own
// default and formats what it parsed unchanged.
func TestParamTable(t *testing.T) {
	seen := map[string]bool{}
	for _, info := range ParamInfos() {
		own := strings.HasPrefix(info.Name, "GOXIO_")
		if !strings.HasPrefix(info.Name, "VMA_") && !own || seen[info.Name] {
			t.Errorf("bad or duplicate name %q", info.Name)
		}
		seen[info.Name] = true
		if info.Description == "" || strings.Contains(info.Description, "\n") || info.Values == "" && !own {
			t.Errorf("%s: description %q values %q", info.Name, info.Description, info.Values)
		}
		if own {
			if _, ok := lookupParam("VMA_" + strings.TrimPrefix(info.Name, "GOXIO_")); ok {
				t.Errorf("%s: goxio's own parameter has a VMA_ spelling", info.Name)
			}
		}
		goxioName := info.Name
		if !own {
			goxioName = "GOXIO_" + strings.TrimPrefix(info.Name, "VMA_")
		}
		i, ok := lookupParam(goxioName)
		if !ok || params[i].name != info.Name {
			t.Errorf("%s: GOXIO_ spelling not found", info.Name)
		}
		p := Defaults()
		if err := params[i].set(&p, info.Default); err != nil {
			t.Errorf("%s: default %q does not parse: %v", info.Name, info.Default, err)
		}
		if got := params[i].format(&p); got != info.Default {
			t.Errorf("%s: default %q formats as %q", info.Name, info.Default, got)
		}
	}
	for _, name := range []string{"VMA_TRACELEVEL", "VMA_LOG_FILE", "VMA_LOG_DETAILS", "VMA_LOG_COLORS", "VMA_CONFIG_FILE",
		"VMA_APPLICATION_ID", "VMA_STATS_SHMEM_DIR", "VMA_STATS_FD_NUM", "VMA_STATS_FILE", "VMA_RX_POLL", "VMA_RX_POLL_INIT",
		"VMA_RX_UDP_POLL_OS_RATIO", "VMA_RX_BYTES_MIN", "VMA_SELECT_POLL", "VMA_SELECT_POLL_OS_RATIO", "VMA_SELECT_SKIP_OS",
		"VMA_TX_NONBLOCKED_EAGAINS", "VMA_TCP_NODELAY", "VMA_OFFLOADED_SOCKETS", "VMA_SPEC", "VMA_THREAD_MODE", "VMA_MTU",
		"VMA_CLOSE_ON_DUP2", "VMA_EXCEPTION_HANDLING", "VMA_PROGRESS_ENGINE_INTERVAL", "VMA_RX_WRE", "VMA_TX_WRE"} {
		if !seen[name] {
			t.Errorf("parameter %s missing", name)
		}
	}
	for _, sp := range specs {
		for _, kv := range sp.set {
			i, ok := paramIndex[kv[0]]
			if !ok {
				t.Errorf("spec %s sets unknown %s", sp.name, kv[0])
				continue
			}
			p := Defaults()
			if err := params[i].set(&p, kv[1]); err != nil {
				t.Errorf("spec %s: %s=%s: %v", sp.name, kv[0], kv[1], err)
			}
		}
	}
}

func TestValues(t *testing.T) {
	cases := []struct {
		env   string
		check func(p Params) bool
	}{
		{"VMA_RX_POLL=-1", func(p Params) bool { return p.RxPoll == -1 }},
		{"VMA_RX_POLL= 42 ", func(p Params) bool { return p.RxPoll == 42 }},
		{"VMA_RX_POLL=100000000", func(p Params) bool { return p.RxPoll == 100000000 }},
		{"VMA_TCP_NODELAY=1", func(p Params) bool { return p.TCPNodelay }},
		{"VMA_TCP_NODELAY=2", func(p Params) bool { return p.TCPNodelay }},
		{"VMA_TCP_NODELAY=true", func(p Params) bool { return p.TCPNodelay }},
		{"VMA_TCP_NODELAY=Yes", func(p Params) bool { return p.TCPNodelay }},
		{"VMA_CLOSE_ON_DUP2=0", func(p Params) bool { return !p.CloseOnDup2 }},
		{"VMA_CLOSE_ON_DUP2=off", func(p Params) bool { return !p.CloseOnDup2 }},
		{"VMA_LOG_COLORS=Disabled", func(p Params) bool { return !p.LogColors }},
		{"VMA_TRACELEVEL=debug", func(p Params) bool { return p.TraceLevel == LevelDebug }},
		{"VMA_TRACELEVEL=4", func(p Params) bool { return p.TraceLevel == LevelDebug }},
		{"VMA_TRACELEVEL=FUNC_ALL", func(p Params) bool { return p.TraceLevel == LevelFiner }},
		{"VMA_TRACELEVEL=none", func(p Params) bool { return p.TraceLevel == LevelNone }},
		{"VMA_THREAD_MODE=3", func(p Params) bool { return p.ThreadMode == ThreadPlenty }},
		{"VMA_EXCEPTION_HANDLING=-2", func(p Params) bool { return p.ExceptionHandling == ExceptionExit }},
		{"VMA_RING_ALLOCATION_LOGIC_RX=20", func(p Params) bool { return p.RingAllocationLogicRX == RingPerThread }},
		{"VMA_LOG_FILE=/tmp/goxio.%d.log", func(p Params) bool { return p.LogFile == "/tmp/goxio.%d.log" }},
		{"VMA_STATS_SHMEM_DIR=", func(p Params) bool { return p.StatsShmemDir == "" }},
		{"VMA_APPLICATION_ID=B1", func(p Params) bool { return p.AppID == "B1" }},
		{"VMA_SPEC=Latency", func(p Params) bool { return p.SpecName == "latency" }},
		{"VMA_SPEC=15", func(p Params) bool { return p.SpecName == "latency" }},
		{"VMA_SPEC=10", func(p Params) bool { return p.SpecName == "ultra-latency" }},
		{"VMA_SPEC=0", func(p Params) bool { return p.SpecName == "none" }},
		{"VMA_INTERNAL_THREAD_AFFINITY=0,2-3", func(p Params) bool { return p.InternalThreadAffinity == "0,2-3" }},
		{"VMA_STATS_FD_NUM=1024", func(p Params) bool { return p.StatsFDNum == 1024 }},
		{"VMA_MTU=9000", func(p Params) bool { return p.MTU == 9000 }},
	}
	for _, c := range cases {
		p := loadOK(t, c.env)
		if !c.check(p) {
			t.Errorf("%s: got %+v", c.env, p)
		}
	}
}

func TestBadValues(t *testing.T) {
	cases := []struct {
		env, msg string
	}{
		{"VMA_RX_POLL=abc", `env VMA_RX_POLL: VMA_RX_POLL "abc": want an integer -1..100000000; keeping 100000 (default)`},
		{"VMA_RX_POLL=-2", "out of range -1..100000000"},
		{"VMA_RX_POLL=100000001", "out of range"},
		{"VMA_RX_POLL=", "want an integer"},
		{"VMA_RX_POLL=0x10", "want an integer"},
		{"VMA_RX_POLL=99999999999999999999999", "want an integer"},
		{"VMA_STATS_FD_NUM=1025", "out of range 0..1024"},
		{"VMA_LOG_DETAILS=4", "out of range 0..3"},
		{"VMA_TCP_NODELAY=maybe", "want 0 or 1"},
		{"VMA_TRACELEVEL=loud", "want none, panic"},
		{"VMA_TRACELEVEL=7", "want none, panic"},
		{"VMA_THREAD_MODE=4", "out of range 0..3"},
		{"VMA_RING_ALLOCATION_LOGIC_TX=5", "want one of 0, 1, 10, 20, 30, 31"},
		{"VMA_SPEC=fastest", "want one of none, ultra-latency, latency"},
		{"VMA_INTERNAL_THREAD_AFFINITY=0x0", "empty"},
		{"VMA_INTERNAL_THREAD_AFFINITY=0xz", "hexadecimal"},
		{"VMA_INTERNAL_THREAD_AFFINITY=3-1", "CPU list"},
		{"VMA_INTERNAL_THREAD_AFFINITY=1024", "CPU list"},
		{"VMA_MTU=70000", "out of range 0..65535"},
	}
	def := Defaults()
	for _, c := range cases {
		p, ws := Load([]string{c.env})
		name, _, _ := strings.Cut(c.env, "=")
		if len(ws) != 1 || ws[0].Source != "env "+name || !strings.Contains(ws[0].Error(), c.msg) {
			t.Errorf("%s: warnings %q, want one from env %s containing %q", c.env, warnsString(ws), name, c.msg)
		}
		i := paramIndex[name]
		if params[i].format(&p) != params[i].format(&def) {
			t.Errorf("%s: value %s, want the default", c.env, params[i].format(&p))
		}
		if got := p.NonDefault(); len(got) != 0 {
			t.Errorf("%s: NonDefault %v", c.env, got)
		}
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.toml")
	writeFile(t, file, `
VMA_SPEC = "latency"
VMA_RX_POLL = 5
VMA_SELECT_POLL = 6
VMA_TCP_NODELAY = false
GOXIO_MTU = 1500
VMA_MTU = 9000
VMA_STATS_FD_NUM = 7
`)
	p, ws := Load([]string{
		"GOXIO_PARAMS_FILE=" + file,
		"VMA_SELECT_POLL=60",
		"VMA_STATS_FD_NUM=70",
		"GOXIO_STATS_FD_NUM=700",
		"VMA_STATS_FD_NUM=99", // second occurrence: ignored, as getenv does
		"GOXIO_RX_POLL=bad",   // bad: the file's value stays
	})
	if len(ws) != 1 || ws[0].Source != "env GOXIO_RX_POLL" || !strings.Contains(ws[0].Msg, "keeping 5 (file "+file+")") {
		t.Errorf("warnings:\n%s", warnsString(ws))
	}
	checks := []struct {
		name, value, source string
	}{
		{"VMA_SPEC", "latency", "file " + file},
		{"VMA_RX_POLL", "5", "file " + file},                  // file over spec (-1)
		{"VMA_SELECT_POLL", "60", "env VMA_SELECT_POLL"},      // env over file over spec
		{"VMA_TCP_NODELAY", "0", "file " + file},              // file over spec (1)
		{"VMA_MTU", "1500", "file " + file},                   // GOXIO_ spelling wins inside the file
		{"VMA_STATS_FD_NUM", "700", "env GOXIO_STATS_FD_NUM"}, // GOXIO_ over VMA_ env over file
		{"VMA_THREAD_MODE", "0", "spec latency"},              // spec over default
		{"VMA_TX_WRE", "256", "spec latency"},
		{"VMA_LOG_COLORS", "1", "default"},
	}
	all := map[string]Setting{}
	for _, s := range p.All() {
		all[s.Name] = s
	}
	for _, c := range checks {
		s := all[c.name]
		if s.Value != c.value || s.Source != c.source {
			t.Errorf("%s = %q from %q, want %q from %q", c.name, s.Value, s.Source, c.value, c.source)
		}
	}
	// NonDefault lists exactly the changed ones, in table order.
	var names []string
	for _, s := range p.NonDefault() {
		names = append(names, s.Name)
		if s.Source == "default" {
			t.Errorf("NonDefault %s from default", s.Name)
		}
	}
	got := strings.Join(names, " ")
	want := "VMA_SPEC VMA_STATS_FD_NUM VMA_RX_POLL VMA_RX_WRE VMA_SELECT_POLL VMA_SELECT_POLL_OS_RATIO VMA_SELECT_SKIP_OS VMA_TX_WRE " +
		"VMA_AVOID_SYS_CALLS_ON_TCP_FD VMA_MTU VMA_THREAD_MODE VMA_PROGRESS_ENGINE_INTERVAL VMA_MEM_ALLOC_TYPE VMA_INTERNAL_THREAD_AFFINITY"
	if got != want {
		t.Errorf("NonDefault names:\n got %s\nwant %s", got, want)
	}
}

func TestSpecs(t *testing.T) {
	p := loadOK(t, "VMA_SPEC=latency")
	if p.RxPoll != -1 || p.SelectPoll != -1 || p.ThreadMode != ThreadSingle || !p.TCPNodelay || p.TxWRE != 256 ||
		p.RxWRE != 256 || p.SelectPollOSRatio != 1 || p.SelectSkipOS != 1 || p.ProgressEngineInterval != 100 ||
		p.MemAllocType != MemHugePages || p.InternalThreadAffinity != "0" || !p.AvoidSysCallsOnTCPFD {
		t.Errorf("latency: %+v", p)
	}
	p = loadOK(t, "GOXIO_SPEC=multi_ring_latency", "VMA_SPEC=latency")
	if p.SpecName != "multi_ring_latency" || p.RingAllocationLogicRX != RingPerThread || p.RingAllocationLogicTX != RingPerThread ||
		p.SelectPollOSRatio != 0 || p.SelectSkipOS != 0 || !p.RxPollOnTxTCP || p.ThreadMode != ThreadMulti {
		t.Errorf("multi_ring_latency: %+v", p)
	}
	// explicit settings win over the profile
	p = loadOK(t, "VMA_SPEC=latency", "VMA_RX_POLL=1000", "GOXIO_TCP_NODELAY=0")
	if p.RxPoll != 1000 || p.TCPNodelay || p.SelectPoll != -1 {
		t.Errorf("latency with overrides: %+v", p)
	}
	p = loadOK(t, "VMA_SPEC=7750")
	if p.TraceLevel != LevelWarning || p.StatsFDNum != 1024 || p.InternalThreadAffinity != "0x3" {
		t.Errorf("7750: %+v", p)
	}
	p, ws := Load([]string{"VMA_SPEC=nope", "VMA_RX_POLL=3"})
	if len(ws) != 1 || p.SpecName != "none" || p.RxPoll != 3 {
		t.Errorf("unknown spec: %+v %v", p, ws)
	}
	for _, n := range SpecNames() {
		if _, err := ParseSpec(strings.ToUpper(n)); err != nil {
			t.Errorf("ParseSpec(%q): %v", n, err)
		}
	}
	if s := SpecSettings("latency"); len(s) == 0 || s[0].Source != "spec latency" {
		t.Errorf("SpecSettings(latency) = %v", s)
	}
	if SpecSettings("nope") != nil {
		t.Error("SpecSettings(nope) not nil")
	}
}

func TestDerived(t *testing.T) {
	p := loadOK(t, "VMA_TRACELEVEL=debug")
	if p.LogDetails != 2 {
		t.Errorf("LogDetails = %d at debug, want 2", p.LogDetails)
	}
	if s := p.NonDefault(); len(s) != 2 || s[1].Name != "VMA_LOG_DETAILS" || s[1].Source != "derived from VMA_TRACELEVEL" {
		t.Errorf("NonDefault = %v", s)
	}
	p = loadOK(t, "VMA_TRACELEVEL=debug", "VMA_LOG_DETAILS=0")
	if p.LogDetails != 0 {
		t.Errorf("explicit LogDetails overridden: %d", p.LogDetails)
	}
	p = loadOK(t, "VMA_SELECT_POLL_OS_FORCE=1")
	if p.SelectPollOSRatio != 1 || p.SelectSkipOS != 1 {
		t.Errorf("force: ratio %d skip %d", p.SelectPollOSRatio, p.SelectSkipOS)
	}
	p = loadOK(t, "VMA_SPEC=multi_ring_latency", "VMA_SELECT_POLL_OS_FORCE=1", "VMA_SELECT_SKIP_OS=9")
	if p.SelectPollOSRatio != 1 || p.SelectSkipOS != 9 {
		t.Errorf("force with spec and explicit skip: ratio %d skip %d", p.SelectPollOSRatio, p.SelectSkipOS)
	}
}

func TestEnvNames(t *testing.T) {
	p, ws := Load([]string{
		"VMA_RX_SKIP_OS=7", "VMA_RX_UDP_POLL_OS_RATIO=3", "VMA_CQ_MODERATION_ENABLE=0", "VMA_NO_SUCH=1",
		"GOXIO_NO_SUCH=1", "GOXIO_LIB=/x.so", "GOXIO_BIN=/x", "PATH=/bin", "NOEQUALS", "VMA_=1",
	})
	if p.RxUDPPollOSRatio != 7 {
		t.Errorf("VMA_RX_SKIP_OS not applied over VMA_RX_UDP_POLL_OS_RATIO: %d", p.RxUDPPollOSRatio)
	}
	want := []string{
		"env VMA_: unknown parameter VMA_; ignored",
		"env VMA_CQ_MODERATION_ENABLE: VMA_CQ_MODERATION_ENABLE is a VMA parameter that goxio does not use; ignored",
		"env VMA_NO_SUCH: unknown parameter VMA_NO_SUCH; ignored",
		"env VMA_RX_SKIP_OS: VMA_RX_SKIP_OS is no longer used; its value is applied to VMA_RX_UDP_POLL_OS_RATIO",
		"env GOXIO_NO_SUCH: unknown parameter GOXIO_NO_SUCH; ignored",
	}
	if got := warnsString(ws); got != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParamsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.toml")
	writeFile(t, file, `# goxio parameters
VMA_TRACELEVEL = "debug"
"VMA_TCP_NODELAY" = 1
VMA_LOG_COLORS = false
VMA_RX_POLL = 1.5
VMA_NOPE = 3
VMA_APPLICATION_ID = 42
VMA_STATS_FD_NUM = [1, 2]
VMA_MTU = 100000
[vma]
VMA_RX_POLL = 1
`)
	p, ws := Load([]string{"GOXIO_PARAMS_FILE=" + file})
	want := []string{
		file + `:5: VMA_RX_POLL "1.5": want an integer -1..100000000; keeping 100000 (default)`,
		file + `:6: unknown parameter "VMA_NOPE"; ignored`,
		file + `:8: VMA_STATS_FD_NUM: want a number, a boolean or a string, not Array; ignored`,
		file + `:10: vma is a table; write parameters as NAME = value at the top of the file; ignored`,
		file + `:9: VMA_MTU "100000": out of range 0..65535; keeping 0 (default)`,
	}
	got := warnsString(ws)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing warning %q in:\n%s", w, got)
		}
	}
	if len(ws) != len(want) {
		t.Errorf("got %d warnings, want %d:\n%s", len(ws), len(want), got)
	}
	if p.TraceLevel != LevelDebug || !p.TCPNodelay || p.LogColors || p.AppID != "42" || p.RxPoll != 100000 {
		t.Errorf("params from file: %+v", p)
	}

	// A syntax error ignores the whole file and names the line.
	writeFile(t, file, "VMA_RX_POLL = 1\nVMA_TCP_NODELAY = \n")
	p, ws = Load([]string{"GOXIO_PARAMS_FILE=" + file})
	if len(ws) != 1 || ws[0].Source != file+":2" || !strings.Contains(ws[0].Msg, "file ignored") || p.RxPoll != 100000 {
		t.Errorf("syntax error: %+v\n%s", p, warnsString(ws))
	}
	writeFile(t, file, "VMA_RX_POLL = 1\nVMA_RX_POLL = 2\n")
	_, ws = Load([]string{"GOXIO_PARAMS_FILE=" + file})
	if len(ws) != 1 || ws[0].Source != file+":2" {
		t.Errorf("duplicate key: %s", warnsString(ws))
	}

	// An unreadable file is one warning naming the variable.
	_, ws = Load([]string{"GOXIO_PARAMS_FILE=" + filepath.Join(dir, "missing.toml")})
	if len(ws) != 1 || ws[0].Source != "env GOXIO_PARAMS_FILE" || !strings.Contains(ws[0].Msg, "missing.toml") {
		t.Errorf("missing file: %s", warnsString(ws))
	}
	// Empty means no file.
	loadOK(t, "GOXIO_PARAMS_FILE=")
}

func TestWithPID(t *testing.T) {
	p := loadOK(t, "VMA_LOG_FILE=/tmp/l.%d.%d", "VMA_STATS_FILE=s%d", "VMA_CONFIG_FILE=/c/%d.conf",
		"VMA_APPLICATION_ID=id%d", "VMA_STATS_SHMEM_DIR=/run/%d/")
	q := p.WithPID(1234)
	if q.LogFile != "/tmp/l.1234.%d" || q.StatsFile != "s1234" || q.ConfigFile != "/c/1234.conf" || q.AppID != "id1234" ||
		q.StatsShmemDir != "/run/1234/" {
		t.Errorf("WithPID: %+v", q)
	}
	if p.LogFile != "/tmp/l.%d.%d" {
		t.Errorf("WithPID changed its receiver: %q", p.LogFile)
	}
	if ExpandPID("plain", 1) != "plain" {
		t.Error("ExpandPID without a pid directive changed the string")
	}
}

func TestProgramChange(t *testing.T) {
	p := Defaults()
	p.RxPoll = 7
	s := p.NonDefault()
	if len(s) != 1 || s[0].Name != "VMA_RX_POLL" || s[0].Value != "7" || s[0].Source != "set by program" {
		t.Errorf("NonDefault = %v", s)
	}
}

func TestParseLevel(t *testing.T) {
	cases := map[string]Level{
		"none": LevelNone, "PANIC": LevelPanic, "0": LevelPanic, "error": LevelError, "1": LevelError,
		"warn": LevelWarning, "WARNING": LevelWarning, "2": LevelWarning, "info": LevelInfo, "Information": LevelInfo,
		"3": LevelInfo, "details": LevelDetails, "debug": LevelDebug, "4": LevelDebug, "fine": LevelFine, "func": LevelFunc,
		"5": LevelFine, "finer": LevelFiner, "FUNC_ALL": LevelFuncAll, "func-all": LevelFiner, "funcall": LevelFiner,
		"func+": LevelFiner, "6": LevelFiner, "all": LevelAll, " debug ": LevelDebug,
	}
	for in, want := range cases {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "7", "8", "-1", "verbose", "de bug"} {
		if _, err := ParseLevel(in); err == nil {
			t.Errorf("ParseLevel(%q) accepted", in)
		}
	}
	names := map[Level]string{LevelNone: "NONE", LevelPanic: "PANIC", LevelWarning: "WARNING", LevelInfo: "INFO",
		LevelDetails: "DETAILS", LevelDebug: "DEBUG", LevelFiner: "FINER", LevelAll: "ALL", Level(9): "LEVEL(9)"}
	for l, want := range names {
		if l.String() != want {
			t.Errorf("Level(%d).String() = %q, want %q", l, l.String(), want)
		}
		if l.Valid() != (want != "LEVEL(9)") {
			t.Errorf("Level(%d).Valid() = %v", l, l.Valid())
		}
	}
	// every level's name parses back to it
	for l := LevelNone; l <= LevelAll; l++ {
		if got, err := ParseLevel(l.String()); err != nil || got != l {
			t.Errorf("ParseLevel(%q) = %v, %v", l.String(), got, err)
		}
	}
}

func TestParseCPUSet(t *testing.T) {
	cases := map[string]string{
		"-1": "", "0": "0", "0x3": "0 1", "0X10": "4", "0,2-3": "0 2 3", "7-7,1": "1 7", "0x8000000000000000": "63",
	}
	for in, want := range cases {
		cpus, err := ParseCPUSet(in)
		var got []string
		for _, c := range cpus {
			got = append(got, itoaTest(c))
		}
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("ParseCPUSet(%q) = %v, %v; want %s", in, cpus, err, want)
		}
	}
	for _, in := range []string{"", "x", "0x", "0x0", "1-", "-", "2-1", "1024", "0,,1", "0x" + strings.Repeat("f", 257)} {
		if _, err := ParseCPUSet(in); err == nil {
			t.Errorf("ParseCPUSet(%q) accepted", in)
		}
	}
}

func itoaTest(i int) string {
	s := ""
	for {
		s = string(rune('0'+i%10)) + s
		i /= 10
		if i == 0 {
			return s
		}
	}
}

func TestWarningString(t *testing.T) {
	w := Warning{Source: "env VMA_X", Msg: "bad"}
	if w.Error() != "env VMA_X: bad" || w.String() != w.Error() {
		t.Errorf("Warning formats as %q", w.Error())
	}
}

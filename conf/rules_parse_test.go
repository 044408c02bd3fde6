package conf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func parse(t *testing.T, text string) (*RuleSet, []error) {
	t.Helper()
	return ParseRules("t.conf", strings.NewReader(text))
}

func mustParse(t *testing.T, text string) *RuleSet {
	t.Helper()
	rs, errs := parse(t, text)
	for _, err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	return rs
}

// TestParseValid checks each syntax element parses into the right rule and
// formats back canonically.
func TestParseValid(t *testing.T) {
	cases := []struct {
		line string
		want string // canonical form
	}{
		{"use vma tcp_server *:*", "use vma tcp_server *:*"},
		{"use os tcp_server *:5001", "use os tcp_server *:5001"},
		{"use os udp_receiver 239.1.1.1:10000-10010", "use os udp_receiver 239.1.1.1:10000-10010"},
		{"use vma tcp_client 192.168.1.0/24:*:*:*", "use vma tcp_client 192.168.1.0/24:*:*:*"},
		{"use os udp_connect 10.0.0.1:53:127.0.0.0/8:1000-2000", "use os udp_connect 10.0.0.1:53:127.0.0.0/8:1000-2000"},
		{"use os udp_sender 0.0.0.0/0:0", "use os udp_sender 0.0.0.0/0:0"},
		{"use os udp_sender 1.2.3.4/32:65535", "use os udp_sender 1.2.3.4:65535"},
		// host bits beyond the prefix are dropped, as VMA masks them
		{"use os tcp_server 1.1.1.5/24:80", "use os tcp_server 1.1.1.0/24:80"},
		// white space and tabs around tokens and inside the address part
		{"  \tuse\tos   tcp_server * : 80  ", "use os tcp_server *:80"},
		{"use os tcp_server 10.0.0.0 / 8 : 1 - 2", "use os tcp_server 10.0.0.0/8:1-2"},
		// trailing comment and CRLF
		{"use os tcp_server *:80 # web\r", "use os tcp_server *:80"},
		{"use os tcp_server *:80#web", "use os tcp_server *:80"},
		{"use os tcp_server *:7-7", "use os tcp_server *:7"},
	}
	for _, c := range cases {
		rs := mustParse(t, c.line+"\n")
		if len(rs.Sections) != 1 || len(rs.Sections[0].Rules) != 1 {
			t.Errorf("%q: got %d sections", c.line, len(rs.Sections))
			continue
		}
		r := rs.Sections[0].Rules[0]
		if got := r.String(); got != c.want {
			t.Errorf("%q: String() = %q, want %q", c.line, got, c.want)
		}
		if r.Line != 1 || r.File != "t.conf" {
			t.Errorf("%q: at %s", c.line, r.Where())
		}
		if want := strings.Trim(strings.TrimSuffix(c.line, "\r"), " \t"); r.Text != want {
			t.Errorf("%q: Text = %q, want %q", c.line, r.Text, want)
		}
	}
}

func TestParseIgnored(t *testing.T) {
	rs := mustParse(t, strings.Join([]string{
		"# a comment",
		"   # indented comment",
		"",
		"   \t  ",
		"log destination syslog min-level 9",
		"log destination file /tmp/x.log",
		"log destination stderr",
		"log",
	}, "\n"))
	if len(rs.Sections) != 0 {
		t.Fatalf("got %d sections, want 0", len(rs.Sections))
	}
	// no final newline, no content: still fine
	rs = mustParse(t, "")
	if rs.NumRules() != 0 {
		t.Fatal("empty input gave rules")
	}
}

func TestParseSections(t *testing.T) {
	rs := mustParse(t, `use os tcp_server *:1
application-id * *
use os tcp_server *:2
application-id db2* B1
use os tcp_server *:3
application-id * *
use os tcp_server *:4
application-id db2* 7
use os tcp_client *:5
`)
	if len(rs.Sections) != 3 {
		t.Fatalf("got %d sections, want 3 (implicit * * merged with the explicit one): %s", len(rs.Sections), rs)
	}
	s0, s1, s2 := rs.Sections[0], rs.Sections[1], rs.Sections[2]
	if s0.Program != "*" || s0.ID != "*" || s0.Line != 0 || s0.Where() != "t.conf" {
		t.Errorf("implicit section = %q at %s", s0, s0.Where())
	}
	if got := ports(s0.RoleRules(RoleTCPServer)); got != "1 2 4" {
		t.Errorf("* * tcp_server rules = %s, want 1 2 4", got)
	}
	if s1.Program != "db2*" || s1.ID != "B1" || s1.Line != 4 || ports(s1.Rules) != "3" {
		t.Errorf("section 1 = %q line %d rules %s", s1, s1.Line, ports(s1.Rules))
	}
	if s2.ID != "7" || len(s2.RoleRules(RoleTCPClient)) != 1 || len(s2.RoleRules(RoleTCPServer)) != 0 {
		t.Errorf("section 2 = %q", s2)
	}
	if rs.NumRules() != 5 {
		t.Errorf("NumRules = %d", rs.NumRules())
	}
	if s1.Rules[0].Section != s1 {
		t.Error("rule does not point to its section")
	}
}

func ports(rules []*Rule) string {
	var p []string
	for _, r := range rules {
		p = append(p, r.First.String()[2:])
	}
	return strings.Join(p, " ")
}

// TestParseErrors checks that each malformed line is reported with its line
// number and a useful message, and that the other lines still apply.
func TestParseErrors(t *testing.T) {
	cases := []struct {
		line string
		msg  string // substring of the message
	}{
		{"USE os tcp_server *:80", `unknown statement "USE"`},
		{"uses os tcp_server *:80", `unknown statement "uses"`},
		{"use", "use wants"},
		{"use os tcp_server", "use wants"},
		{"use tcp os tcp_server *:80", `unknown transport "tcp"`},
		{"use sdp tcp_server *:80", `transport "sdp" is not supported`},
		{"use sa tcp_server *:80", `transport "sa" is not supported`},
		{"use * tcp_server *:80", `transport "*" is not supported`},
		{"use os tcp_srv *:80", `unknown role "tcp_srv"`},
		{"use os tcp *:80", `unknown role "tcp"`},
		{"use os tcp_server *", "address part"},
		{"use os tcp_server *:80:*", "address part"},
		{"use os tcp_server *:80:*:*:*", "address part"},
		{"use os tcp_server *:80:*:*", "4-part form"},
		{"use os udp_sender *:80:*:*", "4-part form"},
		{"use os udp_receiver *:80:*:*", "4-part form"},
		{"use os tcp_server 1.2.3:80", "IPv4 address"},
		{"use os tcp_server 1.2.3.256:80", "IPv4 address"},
		{"use os tcp_server 1.2.3.04:80", "IPv4 address"},
		{"use os tcp_server 1.2.3.-4:80", "IPv4 address"},
		{"use os tcp_server ::1:80", "write IPv6 addresses as [::1]:80"},
		{"use os tcp_server [::1:80", "missing ]"},
		{"use os tcp_server [1.2.3.4]:80", "want an IPv6 address in brackets"},
		{"use os tcp_server [fe80::1%eth0]:80", "no zone"},
		{"use os tcp_server [::1/129]:80", "0-128"},
		{"use os tcp_server [::1/64]/64:80", "two prefix lengths"},
		{"use os tcp_server [::1]80", "goes in brackets"},
		{"use os tcp_server [::1]:80:[::2]:81", "only for tcp_client"},
		{"use os tcp_client 1.1.1.1:80::*", "empty field"},
		{"use os tcp_client :80", "IPv4 address"},
		{"use os tcp_server host.example:80", "IPv4 address"},
		{"use os tcp_server 1.2.3.4/33:80", "prefix length"},
		{"use os tcp_server 1.2.3.4/:80", "prefix length"},
		{"use os tcp_server 1.2.3.4/x:80", "prefix length"},
		{"use os tcp_server */8:80", "IPv4 address"},
		{"use os tcp_server *:65536", "port 0-65535"},
		{"use os tcp_server *:1000000", "port 0-65535"},
		{"use os tcp_server *:080", "port 0-65535"},
		{"use os tcp_server *:http", "port 0-65535"},
		{"use os tcp_server *:-5", "port 0-65535"},
		{"use os tcp_server *:5-", "port 0-65535"},
		{"use os tcp_server *:1-2-3", "port 0-65535"},
		{"use os tcp_server *:20-10", "range start is above its end"},
		{"use os tcp_server *:80 extra", "port 0-65535"},
		{"application-id", "application-id wants 2 words"},
		{"application-id foo", "application-id wants 2 words"},
		{"application-id foo bar baz", "application-id wants 2 words"},
		{"log destination", "destination wants"},
		{"log destination file", "wants a file name"},
		{"log destination console", `unknown destination "console"`},
		{"log min-level 0", "min-level"},
		{"log min-level 10", "min-level"},
		{"log min-level", "min-level wants"},
		{"log verbose", `unknown option "verbose"`},
	}
	for _, c := range cases {
		text := "use os tcp_server *:1\n\n" + c.line + "\nuse os tcp_server *:2\n"
		rs, errs := parse(t, text)
		if len(errs) != 1 {
			t.Errorf("%q: got %d errors %v, want 1", c.line, len(errs), errs)
			continue
		}
		var re *RuleError
		if !errors.As(errs[0], &re) || re.Line != 3 || re.File != "t.conf" {
			t.Errorf("%q: error %v is not a *RuleError at t.conf:3", c.line, errs[0])
		}
		if !strings.HasPrefix(errs[0].Error(), "t.conf:3: ") || !strings.Contains(errs[0].Error(), c.msg) {
			t.Errorf("%q: error %q, want t.conf:3: ...%s...", c.line, errs[0], c.msg)
		}
		if got := ports(rs.Sections[0].Rules); got != "1 2" {
			t.Errorf("%q: rules around the bad line = %s, want 1 2", c.line, got)
		}
	}
}

func TestParseManyErrorsLineNumbers(t *testing.T) {
	text := "application-id * *\r\nbad one\r\nuse os tcp_server *:1\r\n\r\nbad two\r\n# c\r\nuse os tcp_server *:99999\r\nuse os tcp_server *:2"
	rs, errs := parse(t, text)
	var lines []int
	for _, err := range errs {
		var re *RuleError
		if errors.As(err, &re) {
			lines = append(lines, re.Line)
		}
	}
	if len(lines) != 3 || lines[0] != 2 || lines[1] != 5 || lines[2] != 7 {
		t.Errorf("error lines = %v (%v), want [2 5 7]", lines, errs)
	}
	if got := ports(rs.Sections[0].Rules); got != "1 2" {
		t.Errorf("rules = %s, want 1 2", got)
	}
	if r := rs.Sections[0].Rules[1]; r.Line != 8 {
		t.Errorf("last rule at line %d, want 8", r.Line)
	}
}

func TestParseReadError(t *testing.T) {
	// TimeoutReader fails its second read with iotest.ErrTimeout.
	rs, errs := ParseRules("x.conf", iotest.TimeoutReader(strings.NewReader("use os tcp_server *:1\n")))
	if len(errs) != 1 || !errors.Is(errs[0], iotest.ErrTimeout) {
		t.Fatalf("errs = %v, want one wrapping iotest.ErrTimeout", errs)
	}
	if !strings.Contains(errs[0].Error(), "x.conf") {
		t.Errorf("read error %q does not name the file", errs[0])
	}
	if rs.NumRules() != 1 {
		t.Errorf("rules read before the error: %d, want 1", rs.NumRules())
	}
}

func TestLoadRules(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "libvma.conf")
	if err := os.WriteFile(p, []byte("use os tcp_server *:80\nbad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, errs := LoadRules(p)
	if rs.NumRules() != 1 || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), p+":2: ") {
		t.Errorf("LoadRules: %d rules, errs %v", rs.NumRules(), errs)
	}
	rs, errs = LoadRules(filepath.Join(dir, "missing.conf"))
	if rs == nil || rs.NumRules() != 0 || len(errs) != 1 || !errors.Is(errs[0], os.ErrNotExist) {
		t.Errorf("missing file: rs %v errs %v", rs, errs)
	}
	rs, errs = LoadRules(dir)
	if rs == nil || len(errs) != 1 || !strings.Contains(errs[0].Error(), "not a regular file") {
		t.Errorf("directory: rs %v errs %v", rs, errs)
	}
}

// TestDefaultFile checks the shipped libvma.conf parses cleanly and sends DNS
// to the kernel while offloading everything else.
func TestDefaultFile(t *testing.T) {
	rs, errs := LoadRules("../libvma.conf")
	for _, err := range errs {
		t.Errorf("default file: %v", err)
	}
	if lint := rs.Lint(); len(lint) != 0 {
		t.Errorf("default file lint: %v", lint)
	}
	dns := ap("10.0.0.53:53")
	other := ap("10.0.0.53:5353")
	local := ap("10.0.0.1:40000")
	for _, role := range []Role{RoleUDPConnect, RoleUDPSender, RoleTCPClient} {
		if d := rs.Match("anything", "", role, local, dns); d.Target != TargetOS {
			t.Errorf("%s to port 53: %v, want os", role, d)
		}
		if d := rs.Match("anything", "some-id", role, local, other); d.Target != TargetVMA {
			t.Errorf("%s to port 5353: %v, want vma", role, d)
		}
	}
	for _, role := range []Role{RoleUDPReceiver, RoleTCPServer} {
		if d := rs.Match("dnsmasq", "", role, ap("0.0.0.0:53"), ap("")); d.Target != TargetOS {
			t.Errorf("%s on port 53: %v, want os", role, d)
		}
		if d := rs.Match("srv", "", role, ap("0.0.0.0:8080"), ap("")); d.Target != TargetVMA {
			t.Errorf("%s on port 8080: %v, want vma", role, d)
		}
	}
	for _, p := range []Protocol{ProtoTCP, ProtoUDP} {
		if got := rs.MatchProtocol("x", "", p); got != TargetVMA {
			t.Errorf("MatchProtocol(%s) = %s, want vma", p, got)
		}
	}
}

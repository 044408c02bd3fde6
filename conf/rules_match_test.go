package conf

import (
	"net/netip"
	"strings"
	"testing"
)

// ap parses "a.b.c.d:port" or "[v6]:port"; "" is the invalid AddrPort.
func ap(s string) netip.AddrPort {
	if s == "" {
		return netip.AddrPort{}
	}
	return netip.MustParseAddrPort(s)
}

type matchCase struct {
	app, id       string
	role          Role
	local, remote string
	want          Target
	line          int // line of the deciding rule, 0 for none
}

func runMatch(t *testing.T, rs *RuleSet, cases []matchCase) {
	t.Helper()
	for _, c := range cases {
		d := rs.Match(c.app, c.id, c.role, ap(c.local), ap(c.remote))
		line := 0
		if d.Rule != nil {
			line = d.Rule.Line
		}
		if d.Target != c.want || line != c.line {
			t.Errorf("Match(%q, %q, %s, local %s, remote %s) = %v (line %d), want %s line %d",
				c.app, c.id, c.role, c.local, c.remote, d, line, c.want, c.line)
		}
	}
}

func TestMatchAddresses(t *testing.T) {
	rs := mustParse(t, `application-id * *
use os tcp_server 10.1.0.0/16:80
use vma tcp_server 10.0.0.0/8:80
use os tcp_server *:5000-5010
use os udp_receiver 239.1.1.1:*
use os udp_sender 192.168.1.7:1234
use os udp_sender 0.0.0.0/0:9
use os tcp_client 1.2.3.4:443:10.0.0.0/24:*
use os tcp_client 1.2.3.0/24:443
use os udp_connect *:53:127.0.0.1:*
`)
	runMatch(t, rs, []matchCase{
		// prefixes, first match
		{"a", "", RoleTCPServer, "10.1.2.3:80", "", TargetOS, 2},
		{"a", "", RoleTCPServer, "10.2.2.3:80", "", TargetVMA, 3},
		{"a", "", RoleTCPServer, "11.0.0.1:80", "", TargetVMA, 0},
		{"a", "", RoleTCPServer, "10.1.2.3:81", "", TargetVMA, 0},
		// port range bounds
		{"a", "", RoleTCPServer, "0.0.0.0:4999", "", TargetVMA, 0},
		{"a", "", RoleTCPServer, "0.0.0.0:5000", "", TargetOS, 4},
		{"a", "", RoleTCPServer, "1.1.1.1:5010", "", TargetOS, 4},
		{"a", "", RoleTCPServer, "1.1.1.1:5011", "", TargetVMA, 0},
		// wildcard port
		{"a", "", RoleUDPReceiver, "239.1.1.1:1", "", TargetOS, 5},
		{"a", "", RoleUDPReceiver, "239.1.1.1:65535", "", TargetOS, 5},
		{"a", "", RoleUDPReceiver, "239.1.1.2:1", "", TargetVMA, 0},
		// roles are separate lists: a receiver rule says nothing about senders
		{"a", "", RoleUDPSender, "", "239.1.1.1:1", TargetVMA, 0},
		// udp_sender matches the remote address, not the local one
		{"a", "", RoleUDPSender, "0.0.0.0:1234", "192.168.1.7:1234", TargetOS, 6},
		{"a", "", RoleUDPSender, "192.168.1.7:1234", "192.168.1.8:1234", TargetVMA, 0},
		{"a", "", RoleUDPSender, "", "8.8.8.8:9", TargetOS, 7},
		// udp_receiver / tcp_server match the local address, not the remote one
		{"a", "", RoleUDPReceiver, "10.0.0.1:7", "239.1.1.1:7", TargetVMA, 0},
		// 4-part form: remote first, then local
		{"a", "", RoleTCPClient, "10.0.0.9:40000", "1.2.3.4:443", TargetOS, 8},
		{"a", "", RoleTCPClient, "10.0.1.9:40000", "1.2.3.4:443", TargetOS, 9},
		{"a", "", RoleTCPClient, "10.0.1.9:40000", "1.2.4.4:443", TargetVMA, 0},
		{"a", "", RoleTCPClient, "1.2.3.4:443", "10.0.0.9:40000", TargetVMA, 0},
		{"a", "", RoleUDPConnect, "127.0.0.1:5000", "8.8.8.8:53", TargetOS, 10},
		{"a", "", RoleUDPConnect, "10.0.0.1:5000", "8.8.8.8:53", TargetVMA, 0},
		// an unbound local address is 0.0.0.0:0
		{"a", "", RoleUDPConnect, "", "8.8.8.8:53", TargetVMA, 0},
		// IPv4-mapped and IPv4-compatible IPv6 match as IPv4, ::1 as 127.0.0.1
		{"a", "", RoleTCPServer, "[::ffff:10.1.0.1]:80", "", TargetOS, 2},
		{"a", "", RoleTCPServer, "[::10.1.0.1]:80", "", TargetOS, 2},
		{"a", "", RoleUDPConnect, "[::1]:5000", "8.8.8.8:53", TargetOS, 10},
		// other IPv6 addresses match only "*" addresses
		{"a", "", RoleTCPServer, "[2001:db8::1]:80", "", TargetVMA, 0},
		{"a", "", RoleTCPServer, "[2001:db8::1]:5005", "", TargetOS, 4},
		{"a", "", RoleTCPServer, "[fe80::1%eth0]:5005", "", TargetOS, 4},
		// out-of-range role: offload
		{"a", "", Role(9), "10.1.2.3:80", "", TargetVMA, 0},
	})
}

func TestMatchSections(t *testing.T) {
	rs := mustParse(t, `application-id db2* *
use os tcp_server *:1
application-id t?cp B1
use os tcp_server *:2
application-id t?cp *
use os tcp_server *:3
application-id [!x]srv\* 42
use os tcp_server *:4
application-id * VMA_DEFAULT_APPLICATION_ID
use os tcp_server *:5
application-id * *
use os tcp_server *:6
application-id late *
use os tcp_server *:7
`)
	srv := func(app, id string, port int, want Target, line int) matchCase {
		return matchCase{app, id, RoleTCPServer, netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)).String(), "", want, line}
	}
	runMatch(t, rs, []matchCase{
		srv("db2sysc", "", 1, TargetOS, 2),
		srv("/opt/ibm/bin/db2sysc", "", 1, TargetOS, 2), // base name
		srv("db2", "anything", 1, TargetOS, 2),
		srv("xdb2", "", 1, TargetVMA, 0), // falls to "* VMA_DEFAULT_APPLICATION_ID", which has no :1 rule
		// id-specific section before the generic one for the same program
		srv("ttcp", "B1", 2, TargetOS, 4),
		srv("ttcp", "B2", 3, TargetOS, 6),
		srv("ttcp", "", 3, TargetOS, 6),
		// the first matching section decides alone: ttcp with B1 never sees :3
		srv("ttcp", "B1", 3, TargetVMA, 0),
		// an application id of "*" matches every section, so the first one decides
		srv("ttcp", "*", 1, TargetVMA, 0),
		srv("ttcp", "*", 2, TargetOS, 4),
		// bracket and escaped star in the program pattern
		srv("asrv*", "42", 4, TargetOS, 8),
		srv("xsrv*", "42", 4, TargetVMA, 0),
		srv("asrvx", "42", 4, TargetVMA, 0),
		// a process without an id matches sections named by VMA's default id
		srv("other", "", 5, TargetOS, 10),
		srv("other", "zz", 6, TargetOS, 12),
		srv("other", "zz", 5, TargetVMA, 0),
		// a section after "* *" is never consulted
		srv("late", "", 7, TargetVMA, 0),
		srv("late", "x", 7, TargetVMA, 0),
	})
	if s := rs.For("late", "x"); s == nil || s.Line != 11 {
		t.Errorf("For(late, x) = %v, want the * * section at line 11", s)
	}
	if s := rs.For("ttcp", "B1"); s == nil || s.Program != "t?cp" || s.ID != "B1" {
		t.Errorf("For(ttcp, B1) = %v", s)
	}
}

func TestMatchNoSection(t *testing.T) {
	rs := mustParse(t, "application-id foo *\nuse os tcp_server *:*\n")
	d := rs.Match("bar", "", RoleTCPServer, ap("1.1.1.1:1"), ap(""))
	if d.Target != TargetVMA || d.Rule != nil || d.Section != nil {
		t.Errorf("no section: %+v", d)
	}
	if d := rs.Match("foo", "", RoleTCPServer, ap("1.1.1.1:1"), ap("")); d.Target != TargetOS || d.Section == nil {
		t.Errorf("foo: %+v", d)
	}
	var nilSet *RuleSet
	if d := nilSet.Match("foo", "", RoleTCPServer, ap("1.1.1.1:1"), ap("")); d.Target != TargetVMA {
		t.Errorf("nil set: %+v", d)
	}
	if got := nilSet.MatchProtocol("foo", "", ProtoTCP); got != TargetVMA {
		t.Errorf("nil set MatchProtocol: %s", got)
	}
	empty := mustParse(t, "")
	if d := empty.Match("foo", "", RoleUDPSender, ap(""), ap("1.1.1.1:1")); d.Target != TargetVMA || d.Rule != nil {
		t.Errorf("empty set: %+v", d)
	}
}

func TestDecisionString(t *testing.T) {
	rs, _ := ParseRules("/etc/libvma.conf", strings.NewReader("application-id * *\n\n\nuse os udp_receiver *:53   # dns\n"))
	d := rs.Match("x", "", RoleUDPReceiver, ap("0.0.0.0:53"), ap(""))
	if got, want := d.String(), "os (rule /etc/libvma.conf:4 `use os udp_receiver *:53   # dns`)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	d = rs.Match("x", "", RoleUDPReceiver, ap("0.0.0.0:54"), ap(""))
	if got, want := d.String(), "vma (no rule matched)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if d.Section == nil || d.Section.Where() != "/etc/libvma.conf:1" {
		t.Errorf("Section = %v", d.Section)
	}
}

func TestMatchProtocol(t *testing.T) {
	cases := []struct {
		rules string
		p     Protocol
		want  Target
	}{
		{"", ProtoTCP, TargetVMA},
		{"use os tcp_server *:*\nuse os tcp_client *:*\n", ProtoTCP, TargetOS},
		{"use os tcp_server *:*\nuse os tcp_client *:*\n", ProtoUDP, TargetVMA},
		{"use os tcp_server *:*\nuse os tcp_client *:*:*:*\n", ProtoTCP, TargetOS},
		// only one side says os: no agreement, offload
		{"use os tcp_server *:*\n", ProtoTCP, TargetVMA},
		{"use os udp_receiver *:*\nuse os udp_sender *:*\n", ProtoUDP, TargetOS},
		// udp_connect rules do not count
		{"use os udp_receiver *:*\nuse os udp_connect *:*\n", ProtoUDP, TargetVMA},
		// an earlier narrower vma rule keeps the socket offloaded
		{"use vma udp_receiver *:5\nuse os udp_receiver *:*\nuse os udp_sender *:*\n", ProtoUDP, TargetVMA},
		// an earlier narrower os rule does not block a global os verdict
		{"use os udp_receiver *:5\nuse os udp_receiver *:*\nuse os udp_sender *:*\n", ProtoUDP, TargetOS},
		// a narrower os rule before a global vma rule: that vma rule does not decide, the next global os does
		{"use os tcp_server 1.1.1.1:*\nuse vma tcp_server *:*\nuse os tcp_server *:*\nuse os tcp_client *:*\n", ProtoTCP, TargetOS},
		// a 4-part rule with a specific local part is not global
		{"use os tcp_server *:*\nuse os tcp_client *:*:1.1.1.1:*\n", ProtoTCP, TargetVMA},
		// first section disagrees, the next matching one decides
		{"application-id x *\nuse os tcp_server *:*\napplication-id * *\nuse os tcp_server *:*\nuse os tcp_client *:*\n", ProtoTCP, TargetOS},
		// first section agrees on vma (empty lists): decides
		{"application-id x *\napplication-id * *\nuse os tcp_server *:*\nuse os tcp_client *:*\n", ProtoTCP, TargetVMA},
		// a section for another program is skipped
		{"application-id y *\nuse os tcp_server *:*\nuse os tcp_client *:*\n", ProtoTCP, TargetVMA},
	}
	for _, c := range cases {
		rs := mustParse(t, c.rules)
		if got := rs.MatchProtocol("/usr/bin/x", "", c.p); got != c.want {
			t.Errorf("MatchProtocol(%s) with\n%s= %s, want %s", c.p, c.rules, got, c.want)
		}
	}
}

func TestLint(t *testing.T) {
	rs := mustParse(t, `application-id foo B1
use os tcp_server 10.0.0.0/8:*
use os tcp_server 10.1.0.0/16:80-90
use vma tcp_server 11.0.0.0/8:80
use os tcp_client 1.1.1.1:1:*:*
use os tcp_client 1.1.1.1:1:2.2.2.2:2
use os tcp_client 1.1.1.0/24:*
use os tcp_client 1.1.1.1:2:3.3.3.3:3
application-id * *
application-id foo *
application-id foo B1
application-id bar B2
application-id f* B1
`)
	var got []int
	for _, err := range rs.Lint() {
		re := err.(*RuleError)
		got = append(got, re.Line)
	}
	want := []int{3, 6, 8, 10, 12, 13}
	if len(got) != len(want) {
		t.Fatalf("Lint lines = %v, want %v: %v", got, want, rs.Lint())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Lint lines = %v, want %v: %v", got, want, rs.Lint())
		}
	}
	if msg := rs.Lint()[0].Error(); !strings.Contains(msg, "t.conf:3: rule `use os tcp_server 10.1.0.0/16:80-90` never matches") ||
		!strings.Contains(msg, "(t.conf:2)") {
		t.Errorf("message %q", msg)
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	rs := benchRules(t)
	local, remote := ap("10.9.9.9:40000"), ap("172.16.5.5:9999")
	n := testing.AllocsPerRun(100, func() {
		rs.Match("/usr/local/bin/feed_handler", "", RoleTCPClient, local, remote)
		rs.Match("feed_handler", "FH1", RoleUDPReceiver, ap("[::ffff:239.0.0.1]:5000"), remote)
		rs.MatchProtocol("feed_handler", "FH1", ProtoUDP)
	})
	if n != 0 {
		t.Errorf("Match allocates %v times per run", n)
	}
}

// benchRules is a realistic file: a few program sections in front of the
// default one, 40 rules.
func benchRules(tb testing.TB) *RuleSet {
	var b strings.Builder
	b.WriteString("application-id db2* *\nuse os tcp_server *:50000\n")
	b.WriteString("application-id feed_handler FH1\n")
	for i := 0; i < 10; i++ {
		b.WriteString("use os udp_receiver 239.1.1." + itoa(i) + ":10000-10010\n")
	}
	b.WriteString("application-id feed_handler *\n")
	for i := 0; i < 20; i++ {
		b.WriteString("use os tcp_client 172.16." + itoa(i) + ".0/24:1000-2000:10.0.0.0/8:*\n")
	}
	b.WriteString("application-id * *\nuse os udp_connect *:53\nuse os udp_sender *:53\nuse os tcp_client *:53\n")
	rs, errs := ParseRules("bench.conf", strings.NewReader(b.String()))
	if len(errs) != 0 {
		tb.Fatal(errs)
	}
	return rs
}

func itoa(i int) string { return netip.AddrFrom4([4]byte{0, 0, 0, byte(i)}).String()[6:] }

func BenchmarkMatch(b *testing.B) {
	rs := benchRules(b)
	local, remote := ap("10.9.9.9:40000"), ap("172.16.19.5:9999")
	b.ReportAllocs()
	for b.Loop() {
		rs.Match("/usr/local/bin/feed_handler", "", RoleTCPClient, local, remote)
	}
}

func BenchmarkSectionMatch(b *testing.B) {
	rs := benchRules(b)
	s := rs.For("feed_handler", "")
	local, remote := ap("10.9.9.9:40000"), ap("172.16.19.5:9999")
	b.ReportAllocs()
	for b.Loop() {
		s.Match(RoleTCPClient, local, remote)
	}
}

// TestMatchIPv6: IPv6 prefixes in brackets match IPv6 addresses, and IPv4 ones in the v4-mapped
// form a dual-stack socket reports; IPv4 rules match v4-mapped addresses as VMA reads them; the
// canonical form of every rule parses back to itself.
func TestMatchIPv6(t *testing.T) {
	rs := mustParse(t, `application-id * *
use os tcp_server [::1]:80
use os tcp_server [2001:db8::5/32]:*
use os udp_receiver 10.0.0.0/8:53
use os udp_receiver [::ffff:192.168.0.0/112]:53
use os tcp_client [fe80::]/10:*:*:*
use vma udp_connect [::/0]:5000:[::1]:*
use os udp_connect *:5000
`)
	runMatch(t, rs, []matchCase{
		{"a", "", RoleTCPServer, "[::1]:80", "", TargetOS, 2},
		{"a", "", RoleTCPServer, "[::1]:81", "", TargetVMA, 0},
		{"a", "", RoleTCPServer, "127.0.0.1:80", "", TargetVMA, 0}, // ::1 is not 127.0.0.1 for an IPv6 rule
		{"a", "", RoleTCPServer, "[::]:80", "", TargetVMA, 0},
		{"a", "", RoleTCPServer, "[2001:db8:ffff::1]:9", "", TargetOS, 3},
		{"a", "", RoleTCPServer, "[2001:db9::1]:9", "", TargetVMA, 0},
		{"a", "", RoleTCPServer, "[fe80::1%eth0]:80", "", TargetVMA, 0},
		// an IPv4 rule matches the v4-mapped form of its addresses
		{"a", "", RoleUDPReceiver, "[::ffff:10.1.2.3]:53", "", TargetOS, 4},
		{"a", "", RoleUDPReceiver, "10.1.2.3:53", "", TargetOS, 4},
		// an IPv6 rule on v4-mapped addresses matches IPv4 too
		{"a", "", RoleUDPReceiver, "192.168.3.4:53", "", TargetOS, 5},
		{"a", "", RoleUDPReceiver, "[::ffff:192.168.3.4]:53", "", TargetOS, 5},
		{"a", "", RoleUDPReceiver, "192.169.3.4:53", "", TargetVMA, 0},
		{"a", "", RoleTCPClient, "[fe80::1%lo]:1", "[fe80::2%lo]:22", TargetOS, 6},
		{"a", "", RoleTCPClient, "[::1]:1", "[fec0::2]:22", TargetVMA, 0},
		// [::/0] matches every address, IPv4 ones included
		{"a", "", RoleUDPConnect, "[::1]:7", "127.0.0.1:5000", TargetVMA, 7},
		{"a", "", RoleUDPConnect, "127.0.0.1:7", "127.0.0.1:5000", TargetOS, 8},
	})
	want := []string{"[::1]:80", "[2001:db8::/32]:*", "10.0.0.0/8:53", "[::ffff:192.168.0.0/112]:53",
		"[fe80::/10]:*:*:*", "[::/0]:5000:[::1]:*", "*:5000"}
	for i, r := range rs.Sections[0].Rules {
		s := r.First.String()
		if r.HasSecond {
			s += ":" + r.Second.String()
		}
		if s != want[i] {
			t.Errorf("rule %d: %q, want %q", i, s, want[i])
		}
		again := mustParse(t, "use os "+r.Role.String()+" "+s+"\n")
		if got := again.Sections[0].Rules[0]; got.First != r.First || got.Second != r.Second {
			t.Errorf("rule %d: %q parses to %v", i, s, got)
		}
	}
	lint := mustParse(t, "use os tcp_server [::/0]:*\nuse os tcp_server 10.0.0.0/8:80\nuse os tcp_server [2001:db8::/32]:1\nuse os tcp_server [2001:db8::1]:1\n").Lint()
	var lines []int
	for _, err := range lint {
		lines = append(lines, err.(*RuleError).Line)
	}
	if len(lines) != 3 || lines[0] != 2 || lines[1] != 3 || lines[2] != 4 {
		t.Errorf("Lint of rules after [::/0]:*: lines %v, want [2 3 4]: %v", lines, lint)
	}
}

package conf

import (
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
)

var ruleSeeds = []string{
	"",
	"use os tcp_server *:80\n",
	"application-id * *\nuse os udp_connect *:53\n",
	"application-id db2* B1\nuse vma tcp_client 192.168.1.0/24:*:*:*\nuse os tcp_server *:5001\n",
	"use os udp_receiver 239.1.1.1:10000-10010 # md\r\n",
	"use os tcp_client 1.2.3.4:443:10.0.0.0/24:1000-2000\n",
	"use os tcp_server 1.1.1.5/24:80\nbad line\nuse os tcp_server *:65536\n",
	"application-id t?cp [!x]*\nlog destination syslog min-level 3\n",
	"application-id a\\ b\nuse sdp tcp_server *:1\nuse * udp_sender *:2\n",
	"use os tcp_server * : 1 - 2\n\tuse\tvma\tudp_sender\t0.0.0.0/0:0\n",
	"application-id [[:digit:]]* *\nuse os udp_connect *:*:127.0.0.1:*\n",
	"use os tcp_server ::1:80\nuse os tcp_server 1.2.3.04:80\n",
	"use os tcp_server [::1]:80\nuse vma udp_connect [2001:db8::/32]:*:[::ffff:10.0.0.0/104]:1-9\n",
	"use os tcp_client [fe80::]/10:*:*:*\nuse os tcp_server [::1/129]:1\nuse os udp_sender [::1]\n",
}

// FuzzParseRules checks that parsing never panics, that every error names a
// line of the input, and that the canonical form of whatever parsed parses
// again without errors, to the same text, with the same decisions.
func FuzzParseRules(f *testing.F) {
	for _, s := range ruleSeeds {
		f.Add(s)
	}
	if b, err := os.ReadFile("../libvma.conf"); err == nil {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, text string) {
		rs, errs := ParseRules("f.conf", strings.NewReader(text))
		lines := strings.Count(text, "\n")
		if !strings.HasSuffix(text, "\n") && text != "" {
			lines++
		}
		for _, err := range errs {
			var re *RuleError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RuleError", err)
			}
			if re.Line < 1 || re.Line > lines || re.File != "f.conf" {
				t.Fatalf("error %v outside the %d lines of the input", err, lines)
			}
		}
		if rs.NumRules()+len(errs) > lines {
			t.Fatalf("%d rules and %d errors from %d lines", rs.NumRules(), len(errs), lines)
		}
		for _, s := range rs.Sections {
			for _, r := range s.Rules {
				// A rule's own line, parsed alone, gives the same rule.
				one, errs := ParseRules("f.conf", strings.NewReader(r.Text))
				if len(errs) != 0 || one.NumRules() != 1 || one.Sections[0].Rules[0].String() != r.String() {
					t.Fatalf("line %q alone: %v %v", r.Text, one, errs)
				}
				if r.Section != s || r.Line < 1 || r.Line > lines {
					t.Fatalf("rule %v: section %v line %d", r, r.Section, r.Line)
				}
			}
		}

		canon := rs.String()
		rs2, errs2 := ParseRules("g.conf", strings.NewReader(canon))
		if len(errs2) != 0 {
			t.Fatalf("canonical form\n%s\ndoes not parse: %v", canon, errs2)
		}
		if got := rs2.String(); got != canon {
			t.Fatalf("canonical form changed:\n%s\nthen\n%s", canon, got)
		}
		for _, p := range probes(rs) {
			d1 := rs.Match(p.app, p.id, p.role, p.local, p.remote)
			d2 := rs2.Match(p.app, p.id, p.role, p.local, p.remote)
			if d1.Target != d2.Target || (d1.Rule == nil) != (d2.Rule == nil) ||
				(d1.Rule != nil && d1.Rule.String() != d2.Rule.String()) {
				t.Fatalf("probe %+v: %v from the input, %v from its canonical form", p, d1, d2)
			}
			if d1.Rule != nil && d1.Rule.Role != p.role {
				t.Fatalf("probe %+v decided by a %s rule", p, d1.Rule.Role)
			}
			for _, proto := range []Protocol{ProtoTCP, ProtoUDP} {
				if a, b := rs.MatchProtocol(p.app, p.id, proto), rs2.MatchProtocol(p.app, p.id, proto); a != b {
					t.Fatalf("MatchProtocol(%q, %q, %s): %s vs %s", p.app, p.id, proto, a, b)
				}
			}
		}
		_ = rs.Lint()
	})
}

type probe struct {
	app, id       string
	role          Role
	local, remote netip.AddrPort
}

// probes derives sockets that exercise the rules of rs: the first address
// and port of every rule and its neighbours, for each section's program and
// id written literally and for an unrelated program.
func probes(rs *RuleSet) []probe {
	var eps []netip.AddrPort
	for _, s := range rs.Sections {
		for _, r := range s.Rules {
			for _, e := range []Endpoint{r.First, r.Second} {
				a := netip.IPv4Unspecified()
				if e.Prefix.IsValid() {
					a = e.Prefix.Addr()
				}
				eps = append(eps, netip.AddrPortFrom(a, e.PortLo), netip.AddrPortFrom(a, e.PortHi),
					netip.AddrPortFrom(a.Prev(), e.PortLo), netip.AddrPortFrom(a, e.PortHi+1))
			}
		}
	}
	if len(eps) > 16 {
		eps = eps[:16]
	}
	eps = append(eps, netip.AddrPort{}, netip.MustParseAddrPort("[2001:db8::1]:53"))
	type who struct{ app, id string }
	apps := []who{{"prog", ""}, {"prog", "*"}}
	for i, s := range rs.Sections {
		if i == 4 {
			break
		}
		apps = append(apps, who{s.Program, s.ID})
	}
	var out []probe
	for _, w := range apps {
		for role := Role(0); role < numRoles; role++ {
			for i, e := range eps {
				out = append(out, probe{w.app, w.id, role, e, eps[(i+1)%len(eps)]})
			}
		}
	}
	return out
}

package conf

import (
	"net/netip"
	"strings"
	"testing"
)

func TestSectionWithFirst(t *testing.T) {
	rs, errs := ParseRules("file", strings.NewReader("use os udp_receiver *:5001\nuse vma udp_receiver *:*\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	old := rs.For("prog", "")
	local := netip.MustParseAddrPort("127.0.0.1:5001")
	if d := old.Match(RoleUDPReceiver, local, netip.AddrPort{}); d.Target != TargetOS {
		t.Fatalf("before: %v, want os", d.Target)
	}
	add, errs := ParseRules("add", strings.NewReader("use vma udp_receiver 127.0.0.1:5001"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	n := old.WithFirst(add.Sections[0].Rules[0])
	if d := n.Match(RoleUDPReceiver, local, netip.AddrPort{}); d.Target != TargetVMA {
		t.Fatalf("after: %v, want vma (the added rule first)", d.Target)
	}
	if d := old.Match(RoleUDPReceiver, local, netip.AddrPort{}); d.Target != TargetOS {
		t.Fatalf("the old section changed: %v", d.Target)
	}
	if len(n.Rules) != 3 || n.Rules[0].Text != "use vma udp_receiver 127.0.0.1:5001" || len(old.Rules) != 2 {
		t.Fatalf("rules %v, old %v", n.Rules, old.Rules)
	}
	var none *Section
	os, _ := ParseRules("add", strings.NewReader("use os tcp_client *:*"))
	s := none.WithFirst(os.Sections[0].Rules[0])
	if d := s.Match(RoleTCPClient, netip.MustParseAddrPort("10.0.0.1:80"), local); d.Target != TargetOS {
		t.Fatalf("from no section: %v, want os", d.Target)
	}
	if !s.matches("anything", "x") {
		t.Fatal("the implicit section does not match every program")
	}
}

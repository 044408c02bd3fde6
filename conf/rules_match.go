package conf

import (
	"net/netip"
	"strings"
)

// DefaultAppID is the application id of a process that sets neither
// VMA_APPLICATION_ID nor GOXIO_APPLICATION_ID, as in VMA: it matches only
// sections whose id is "*" (and, like in VMA, a section that names this id).
const DefaultAppID = "VMA_DEFAULT_APPLICATION_ID"

// Decision is the outcome of a rule lookup.
type Decision struct {
	Target Target
	// Rule is the rule that decided, nil when no rule matched (the socket is
	// then offloaded, as in VMA).
	Rule *Rule
	// Section is the application-id section that was consulted, nil when no
	// section applies to the program and id.
	Section *Section
}

// String describes the decision for logs and tools, e.g.
// "os (rule /etc/libvma.conf:12 `use os udp_receiver *:53`)" or
// "vma (no rule matched)".
func (d Decision) String() string {
	if d.Rule == nil {
		return d.Target.String() + " (no rule matched)"
	}
	return d.Target.String() + " (rule " + d.Rule.Where() + " `" + d.Rule.Text + "`)"
}

// Match decides where a socket goes. app is the program name (VMA uses the
// base name of argv[0]; a path is reduced to its base name here), id the
// application id ("" when unset, meaning DefaultAppID). local and remote are
// the socket's addresses; the role says which of them rules look at:
// tcp_server and udp_receiver the local one, udp_sender the remote one,
// tcp_client and udp_connect the remote one then the local one. An invalid
// AddrPort stands for 0.0.0.0:0. IPv4-mapped and IPv4-compatible IPv6
// addresses are matched as IPv4 (::1 as 127.0.0.1); other IPv6 addresses
// match only rules whose address is "*".
//
// As in VMA, the first section whose program pattern and id match decides
// alone: its first matching rule for the role wins, and when none matches
// the socket is offloaded, even if a later section would have matched.
// Match does not allocate.
func (rs *RuleSet) Match(app, id string, role Role, local, remote netip.AddrPort) Decision {
	return rs.For(app, id).Match(role, local, remote)
}

// For returns the section that decides for program app with application id
// id (see Match), or nil when no section applies. Callers that match many
// sockets of one process can look the section up once and call its Match.
func (rs *RuleSet) For(app, id string) *Section {
	if rs == nil {
		return nil
	}
	if i := strings.LastIndexByte(app, '/'); i >= 0 {
		app = app[i+1:]
	}
	if id == "" {
		id = DefaultAppID
	}
	for _, s := range rs.Sections {
		if s.matches(app, id) {
			return s
		}
	}
	return nil
}

// matches reports whether the section applies to program app (a base name)
// and application id id (never empty), as VMA's __vma_match_program_name and
// __vma_match_user_defined_id do.
func (s *Section) matches(app, id string) bool {
	return (id == "*" || s.ID == "*" || s.ID == id) && s.prog.match(app)
}

// Match returns the decision of this section for a socket (see
// RuleSet.Match). A nil section offloads everything.
func (s *Section) Match(role Role, local, remote netip.AddrPort) Decision {
	if s == nil || role >= numRoles {
		return Decision{Target: TargetVMA}
	}
	var first, second netip.AddrPort
	switch role {
	case RoleTCPServer, RoleUDPReceiver:
		first = local
	case RoleUDPSender:
		first = remote
	default: // tcp_client, udp_connect: remote then local
		first, second = remote, local
	}
	fa, fok, fp := ipv4Of(first)
	sa, sok, sp := ipv4Of(second)
	f16, s16 := ipv6Of(first), ipv6Of(second)
	for _, r := range s.roles[role] {
		if !r.First.match(fa, fok, f16, fp) {
			continue
		}
		if r.HasSecond && !r.Second.match(sa, sok, s16, sp) {
			continue
		}
		return Decision{Target: r.Target, Rule: r, Section: s}
	}
	return Decision{Target: TargetVMA, Section: s}
}

// ipv4Of converts an address the way VMA's __vma_sockaddr_to_vma does: IPv4
// as is; IPv6 with the first 80 bits zero and the next 16 all zero or all one
// as the embedded IPv4 address, with 0.0.0.1 (from ::1) read as 127.0.0.1;
// any other IPv6 address gives ok == false. The invalid AddrPort is 0.0.0.0:0.
func ipv4Of(ap netip.AddrPort) (addr uint32, ok bool, port uint16) {
	if !ap.IsValid() {
		return 0, true, 0
	}
	a := ap.Addr()
	port = ap.Port()
	if a.Is4() {
		b := a.As4()
		return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), true, port
	}
	b := a.As16()
	for _, x := range b[:10] {
		if x != 0 {
			return 0, false, port
		}
	}
	if !(b[10] == 0 && b[11] == 0) && !(b[10] == 0xff && b[11] == 0xff) {
		return 0, false, port
	}
	addr = uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
	if addr == 1 {
		addr = 0x7f000001
	}
	return addr, true, port
}

// ipv6Of is the address of ap as IPv6 rules see it: IPv4 as ::ffff:a.b.c.d (the form a
// dual-stack socket reports), the zone dropped, no address (the zero AddrPort) as ::.
func ipv6Of(ap netip.AddrPort) netip.Addr {
	if !ap.IsValid() {
		return netip.IPv6Unspecified()
	}
	return netip.AddrFrom16(ap.Addr().As16())
}

// MatchProtocol decides at socket creation whether every socket of protocol
// p of this program must go to the kernel, as VMA's __vma_match_by_program
// does: in each section that applies (in order), the server-side list
// (tcp_server or udp_receiver) and the client-side list (tcp_client or
// udp_sender) are each reduced to a verdict — the first rule that matches
// every address and port decides, unless an earlier narrower rule has the
// opposite target; no such rule means offload — and the first section whose
// two verdicts agree gives the answer. With no agreement the socket is
// offloaded and Match decides later, per address.
func (rs *RuleSet) MatchProtocol(app, id string, p Protocol) Target {
	if rs == nil {
		return TargetVMA
	}
	if i := strings.LastIndexByte(app, '/'); i >= 0 {
		app = app[i+1:]
	}
	if id == "" {
		id = DefaultAppID
	}
	server, client := RoleTCPServer, RoleTCPClient
	if p == ProtoUDP {
		server, client = RoleUDPReceiver, RoleUDPSender
	}
	for _, s := range rs.Sections {
		if !s.matches(app, id) {
			continue
		}
		if a, b := programVerdict(s.roles[server]), programVerdict(s.roles[client]); a == b {
			return a
		}
	}
	return TargetVMA
}

// programVerdict reduces one rule list to VMA's whole-program verdict.
func programVerdict(rules []*Rule) Target {
	anyVMA, anyOS := false, false
	for _, r := range rules {
		if !r.global() {
			if r.Target == TargetVMA {
				anyVMA = true
			} else {
				anyOS = true
			}
			continue
		}
		if r.Target == TargetVMA && !anyOS {
			return TargetVMA
		}
		if r.Target == TargetOS && !anyVMA {
			return TargetOS
		}
	}
	return TargetVMA
}

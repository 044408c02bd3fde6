package conf

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Role is the part a socket plays when a rule is looked up; each role has its
// own rule list in every application-id section, as in VMA.
type Role uint8

// The roles of libvma.conf, with the addresses each one is matched on.
const (
	// RoleTCPServer: a listening TCP socket, matched on its local address
	// (checked at listen). Accepted sockets follow their listener.
	RoleTCPServer Role = iota
	// RoleTCPClient: a connecting TCP socket, matched on the remote address
	// and, with the 4-part form, the local address (checked at connect).
	RoleTCPClient
	// RoleUDPSender: traffic a UDP socket sends, matched on the destination
	// (checked at the first send to each destination).
	RoleUDPSender
	// RoleUDPReceiver: traffic a UDP socket receives, matched on its local
	// address (checked at bind, and on the group address for multicast joins).
	RoleUDPReceiver
	// RoleUDPConnect: a connected UDP socket, matched on the remote address
	// and, with the 4-part form, the local address (checked at connect). As in
	// VMA, "use os udp_connect" hands the whole socket to the kernel, while
	// "use vma udp_connect" leaves it to the udp_sender and udp_receiver rules.
	RoleUDPConnect

	numRoles = 5
)

var roleNames = [numRoles]string{"tcp_server", "tcp_client", "udp_sender", "udp_receiver", "udp_connect"}

// String returns the role's libvma.conf keyword (tcp_server, tcp_client,
// udp_sender, udp_receiver, udp_connect).
func (r Role) String() string {
	if r < numRoles {
		return roleNames[r]
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// TwoAddresses reports whether rules for the role may give a second
// (local) address: true for tcp_client and udp_connect.
func (r Role) TwoAddresses() bool { return r == RoleTCPClient || r == RoleUDPConnect }

// ParseRole parses a role keyword as written in libvma.conf.
func ParseRole(s string) (Role, error) {
	for i, n := range roleNames {
		if s == n {
			return Role(i), nil
		}
	}
	return 0, fmt.Errorf("parse role %q: want tcp_server, tcp_client, udp_sender, udp_receiver or udp_connect", s)
}

// Target is where a matched socket goes.
type Target uint8

// Targets. The zero value is TargetVMA: with no matching rule a socket is
// offloaded, as in VMA.
//
// String (target_string.go, generated) returns "vma" or "os", the words used in libvma.conf.
const (
	// TargetVMA: offload through goxio.
	TargetVMA Target = iota // vma
	// TargetOS: leave to the kernel.
	TargetOS // os
)

//go:generate go tool stringer -type=Target -linecomment

// Protocol selects the TCP or the UDP rule lists for RuleSet.MatchProtocol.
type Protocol uint8

// Protocols.
const (
	ProtoTCP Protocol = iota
	ProtoUDP
)

// String returns "tcp" or "udp".
func (p Protocol) String() string {
	if p == ProtoTCP {
		return "tcp"
	}
	return "udp"
}

// Endpoint is one address:port pattern of a rule.
type Endpoint struct {
	// Prefix is the network to match: IPv4 (a.b.c.d/n) or IPv6 ([x::y/n]); the zero Prefix
	// (not IsValid) stands for "*", any address.
	Prefix netip.Prefix
	// PortLo and PortHi bound the port range, inclusive; "*" is 0-65535.
	PortLo, PortHi uint16
	// AnyPort is true when the rule wrote "*" for the port.
	AnyPort bool

	net, mask uint32 // an IPv4 Prefix as host-order words; mask 0 matches any address
}

// Any reports whether the endpoint matches every address and port ("*:*").
func (e Endpoint) Any() bool { return !e.Prefix.IsValid() && e.PortLo == 0 && e.PortHi == 65535 }

// v6 reports whether the endpoint's address is an IPv6 prefix.
func (e Endpoint) v6() bool { return e.Prefix.IsValid() && e.Prefix.Addr().Is6() }

// String formats the endpoint in libvma.conf syntax: "*:*", "10.0.0.0/8:80",
// "1.2.3.4:1000-2000", "[::1]:80", "[2001:db8::/32]:*".
func (e Endpoint) String() string {
	var b strings.Builder
	switch {
	case e.v6():
		b.WriteByte('[')
		b.WriteString(e.Prefix.Addr().String())
		if e.Prefix.Bits() != 128 {
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(e.Prefix.Bits()))
		}
		b.WriteByte(']')
	case e.Prefix.IsValid():
		b.WriteString(e.Prefix.Addr().String())
		if e.Prefix.Bits() != 32 {
			b.WriteByte('/')
			b.WriteString(strconv.Itoa(e.Prefix.Bits()))
		}
	default:
		b.WriteByte('*')
	}
	b.WriteByte(':')
	switch {
	case e.AnyPort:
		b.WriteByte('*')
	case e.PortLo == e.PortHi:
		b.WriteString(strconv.Itoa(int(e.PortLo)))
	default:
		b.WriteString(strconv.Itoa(int(e.PortLo)))
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(int(e.PortHi)))
	}
	return b.String()
}

// covers reports whether e matches every address and port that x matches. It may answer
// false when it cannot tell cheaply (an IPv4 prefix against an IPv6 one): it feeds warnings only.
func (e Endpoint) covers(x Endpoint) bool {
	if e.PortLo > x.PortLo || x.PortHi > e.PortHi {
		return false
	}
	switch {
	case !e.Prefix.IsValid():
		return true
	case e.v6():
		// An IPv6 prefix matches IPv4 addresses in their v4-mapped form (match).
		xp := x.Prefix
		if !xp.IsValid() {
			return e.Prefix.Bits() == 0
		}
		if xp.Addr().Is4() {
			xp = netip.PrefixFrom(netip.AddrFrom16(xp.Addr().As16()), 96+xp.Bits())
		}
		return e.Prefix.Bits() <= xp.Bits() && e.Prefix.Contains(xp.Addr())
	case x.v6() || !x.Prefix.IsValid():
		return false
	}
	return e.mask&x.mask == e.mask && x.net&e.mask == e.net
}

// match reports whether an address and port match. a, ok are the address as IPv4 the way VMA
// reads it (ipv4Of: ok is false when it is not IPv4 nor IPv4 embedded in IPv6) and a16 the
// address as IPv6 (IPv4 as ::ffff:a.b.c.d, no address as ::). An IPv4 prefix matches a, so an
// IPv6 address only when it embeds IPv4 (as VMA); an IPv6 prefix matches a16, so IPv4
// addresses as the kernel shows them to a dual-stack socket (v4-mapped).
func (e *Endpoint) match(a uint32, ok bool, a16 netip.Addr, port uint16) bool {
	if port < e.PortLo || port > e.PortHi {
		return false
	}
	switch {
	case !e.Prefix.IsValid():
		return true
	case e.v6():
		return e.Prefix.Contains(a16)
	}
	return ok && a&e.mask == e.net
}

// Rule is one "use" line of a rule file.
type Rule struct {
	File string // file name as given to ParseRules / LoadRules
	Line int    // 1-based line number
	Text string // the line as written, without surrounding white space

	Target Target
	Role   Role
	// First is the first address:port of the line: the local address for
	// tcp_server and udp_receiver, the remote one for tcp_client,
	// udp_sender and udp_connect.
	First Endpoint
	// Second is the local address:port of the 4-part form (tcp_client and
	// udp_connect only); valid only when HasSecond.
	Second    Endpoint
	HasSecond bool

	// Section is the application-id section the rule belongs to.
	Section *Section
}

// String formats the rule in canonical libvma.conf syntax.
func (r *Rule) String() string {
	s := "use " + r.Target.String() + " " + r.Role.String() + " " + r.First.String()
	if r.HasSecond {
		s += ":" + r.Second.String()
	}
	return s
}

// Where returns "file:line".
func (r *Rule) Where() string { return r.File + ":" + strconv.Itoa(r.Line) }

// global reports whether the rule matches every address and port (VMA's
// notion of a rule that decides for a whole program).
func (r *Rule) global() bool { return r.First.Any() && (!r.HasSecond || r.Second.Any()) }

// Section is an "application-id <program> <id>" section: the rules that
// apply to programs whose name matches Program and whose application id
// matches ID. Rules written before any application-id line belong to an
// implicit "application-id * *" section (Line 0), as in VMA. Sections with
// the same program and id are one section, as in VMA: later lines add to it.
type Section struct {
	File    string
	Line    int    // line of the first application-id line; 0 for the implicit section
	Program string // shell-style pattern (*, ?, [...]) on the program's base name
	ID      string // application id, or "*" for any

	// Rules lists the section's rules in file order, all roles together.
	Rules []*Rule

	prog  glob
	roles [numRoles][]*Rule
}

// String formats the section header: "application-id <program> <id>".
func (s *Section) String() string { return "application-id " + s.Program + " " + s.ID }

// Where returns "file:line", or the file alone for the implicit section.
func (s *Section) Where() string {
	if s.Line == 0 {
		return s.File
	}
	return s.File + ":" + strconv.Itoa(s.Line)
}

// RoleRules returns the section's rules for one role, in file order.
func (s *Section) RoleRules(r Role) []*Rule {
	if r >= numRoles {
		return nil
	}
	return s.roles[r]
}

// RuleSet is a parsed rule file. It is immutable after parsing and safe for
// concurrent use.
type RuleSet struct {
	// Sections in the order of their first appearance.
	Sections []*Section
}

// NumRules returns the number of rules in all sections.
func (rs *RuleSet) NumRules() int {
	n := 0
	for _, s := range rs.Sections {
		n += len(s.Rules)
	}
	return n
}

// String formats the whole set in canonical libvma.conf syntax, one section
// header followed by its rules; parsing the result gives an equivalent set.
func (rs *RuleSet) String() string {
	var b strings.Builder
	for _, s := range rs.Sections {
		b.WriteString(s.String())
		b.WriteByte('\n')
		for _, r := range s.Rules {
			b.WriteString(r.String())
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// RuleError is a problem on one line of a rule file. ParseRules returns its
// errors as *RuleError.
type RuleError struct {
	File string
	Line int
	Msg  string
}

// Error formats the problem as "file:line: message".
func (e *RuleError) Error() string { return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg }

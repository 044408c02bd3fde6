package conf

// Parsing of libvma.conf, following VMA's grammar (config_parser.y and
// config_scanner.l) statement by statement:
//
//	application-id <program|*> <user-defined-id|*>
//	use <vma|os> <role> <address|*>:<ports|*>[:<address|*>:<ports|*>]
//	log [destination stderr|syslog|file <name>] [min-level <1-9>]
//	# comment
//
// Differences from VMA, all in the direction of reporting more:
//   - VMA stops at the first malformed line; goxio reports the line, skips it
//     and applies the rest of the file.
//   - VMA silently clamps a prefix length above 32 and truncates ports above
//     65535; goxio reports both, and a port range whose start is above its end
//     (which VMA accepts and never matches).
//   - VMA's grammar accepts the transports "sdp", "sa" and "*". VMA itself
//     never matches sdp or sa rules, and treats "*" as offload for tcp_server
//     but as OS for every other role; goxio reports all three as errors and
//     skips the line, so that no rule has a meaning that depends on the role.
//   - The 4-part form (remote then local) is accepted for tcp_client and
//     udp_connect only; VMA accepts it for every role and ignores the second
//     part of the others, which goxio reports rather than silently ignores.
//   - "log" statements are checked and ignored: VMA's own implementation of
//     them does not change its logging either; use VMA_TRACELEVEL and
//     VMA_LOG_FILE.
//
// Keywords are lower case, as in VMA. White space inside the address part is
// allowed ("* : 80"), as VMA's scanner skips it between tokens. A '#' starts a
// comment anywhere on a line.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
)

// LoadRules reads and parses the rule file at path. A file that cannot be read
// gives an empty set (every socket offloaded, as VMA does without a file) and
// one error.
func LoadRules(path string) (*RuleSet, []error) {
	data, err := readConfigFile(path)
	if errors.Is(err, errNotRegular) {
		return &RuleSet{}, []error{fmt.Errorf("load rules %s: not a regular file", path)}
	}
	if err != nil {
		return &RuleSet{}, []error{fmt.Errorf("load rules: %w", err)}
	}
	return ParseRules(path, bytes.NewReader(data))
}

// ParseRules parses a rule file read from r; name is the file name used in
// rules and messages. Every malformed line gives one *RuleError (a failure to
// read r gives a plain error) and is skipped; the other lines apply.
func ParseRules(name string, r io.Reader) (*RuleSet, []error) {
	p := ruleParser{file: name, rs: &RuleSet{}, byKey: map[[2]string]*Section{}}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			p.line++
			p.parseLine(line)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.errs = append(p.errs, fmt.Errorf("read rules %s: %w", name, err))
			}
			break
		}
	}
	return p.rs, p.errs
}

type ruleParser struct {
	file  string
	line  int
	rs    *RuleSet
	cur   *Section
	byKey map[[2]string]*Section
	errs  []error
}

func (p *ruleParser) errorf(format string, args ...any) {
	p.errs = append(p.errs, &RuleError{File: p.file, Line: p.line, Msg: fmt.Sprintf(format, args...)})
}

// space lists the bytes that separate words: VMA's blanks and tabs, plus
// carriage returns (files written on Windows) and the other ASCII spaces.
const space = " \t\r\v\f"

// fields splits s into words separated by space bytes.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r < 0x80 && strings.IndexByte(space, byte(r)) >= 0 })
}

func (p *ruleParser) parseLine(raw string) {
	raw = strings.TrimSuffix(raw, "\n")
	text := raw
	if i := strings.IndexByte(text, '#'); i >= 0 {
		text = text[:i]
	}
	f := fields(text)
	if len(f) == 0 {
		return
	}
	orig := strings.Trim(raw, space)
	switch f[0] {
	case "application-id":
		p.parseAppID(f)
	case "use":
		p.parseUse(f, orig)
	case "log":
		p.parseLog(f)
	default:
		p.errorf("unknown statement %q: want application-id, use or log (keywords are lower case)", f[0])
	}
}

func (p *ruleParser) parseAppID(f []string) {
	if len(f) != 3 {
		p.errorf("application-id wants 2 words, <program|*> <user-defined-id|*>; got %d", len(f)-1)
		return
	}
	p.cur = p.section(f[1], f[2], p.line)
}

// section returns the section for program and id, creating it at the end of
// the list when it is new; VMA merges sections with the same program and id.
func (p *ruleParser) section(prog, id string, line int) *Section {
	key := [2]string{prog, id}
	if s := p.byKey[key]; s != nil {
		return s
	}
	s := &Section{File: p.file, Line: line, Program: prog, ID: id, prog: compileGlob(prog)}
	p.byKey[key] = s
	p.rs.Sections = append(p.rs.Sections, s)
	return s
}

func (p *ruleParser) parseLog(f []string) {
	for i := 1; i < len(f); i++ {
		switch f[i] {
		case "destination":
			if i+1 >= len(f) {
				p.errorf("log: destination wants stderr, syslog or file <name>")
				return
			}
			i++
			switch f[i] {
			case "stderr", "syslog":
			case "file":
				if i+1 >= len(f) {
					p.errorf("log: destination file wants a file name")
					return
				}
				i++
			default:
				p.errorf("log: unknown destination %q: want stderr, syslog or file <name>", f[i])
				return
			}
		case "min-level":
			if i+1 >= len(f) {
				p.errorf("log: min-level wants a number 1-9")
				return
			}
			i++
			if n, err := strconv.Atoi(f[i]); err != nil || n < 1 || n > 9 {
				p.errorf("log: min-level %q: want a number 1-9", f[i])
				return
			}
		default:
			p.errorf("log: unknown option %q: want destination or min-level", f[i])
			return
		}
	}
}

func (p *ruleParser) parseUse(f []string, orig string) {
	if len(f) < 4 {
		p.errorf("use wants <vma|os> <role> <address>:<ports>[:<address>:<ports>]")
		return
	}
	r := &Rule{File: p.file, Line: p.line, Text: orig}
	switch f[1] {
	case "vma":
		r.Target = TargetVMA
	case "os":
		r.Target = TargetOS
	case "sdp", "sa", "*":
		p.errorf("use: transport %q is not supported (VMA never offloads through it); want vma or os", f[1])
		return
	default:
		p.errorf("use: unknown transport %q: want vma or os", f[1])
		return
	}
	role, err := ParseRole(f[2])
	if err != nil {
		p.errorf("use: unknown role %q: want tcp_server, tcp_client, udp_sender, udp_receiver or udp_connect", f[2])
		return
	}
	r.Role = role
	// The address part is the rest of the line with white space removed.
	tuple := strings.Join(f[3:], "")
	eps, err := splitTuple(tuple)
	if err != nil {
		p.errorf("use: address part %q: %v", tuple, err)
		return
	}
	switch len(eps) {
	case 1:
	case 2:
		if !role.TwoAddresses() {
			p.errorf("use: %s takes one address:port; the 4-part form (remote then local) is only for tcp_client and udp_connect", role)
			return
		}
		r.HasSecond = true
	default:
		p.errorf("use: address part %q: want <address|*>:<ports|*>, or for tcp_client and udp_connect <remote>:<ports>:<local>:<ports>", tuple)
		return
	}
	if r.First, err = parseEndpoint(eps[0][0], eps[0][1]); err != nil {
		p.errorf("use: %v", err)
		return
	}
	if r.HasSecond {
		if r.Second, err = parseEndpoint(eps[1][0], eps[1][1]); err != nil {
			p.errorf("use: %v", err)
			return
		}
	}
	if p.cur == nil {
		// VMA puts rules that come before any application-id line in an
		// "application-id * *" section.
		p.cur = p.section("*", "*", 0)
	}
	r.Section = p.cur
	p.cur.Rules = append(p.cur.Rules, r)
	p.cur.roles[role] = append(p.cur.roles[role], r)
}

// splitTuple splits a rule's address part (white space removed) into its (address, ports)
// pairs: "<address>:<ports>" once or twice, where an address is *, a.b.c.d[/n], or an IPv6
// address in brackets, [x::y] or [x::y/n] ([x::y]/n is read as [x::y/n]). Anything else, an
// IPv6 address without brackets included, is an error.
func splitTuple(tuple string) ([][2]string, error) {
	if strings.Contains(tuple, "::") && !strings.Contains(tuple, "[") {
		return nil, fmt.Errorf("an empty field or an IPv6 address without brackets; write IPv6 addresses as [::1]:80")
	}
	var out [][2]string
	for rest := tuple; ; {
		var addr string
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("missing ] after %q", rest)
			}
			addr, rest = rest[:end+1], rest[end+1:]
			if strings.HasPrefix(rest, "/") {
				i := strings.IndexByte(rest, ':')
				if i < 0 {
					i = len(rest)
				}
				if strings.Contains(addr, "/") {
					return nil, fmt.Errorf("address %s%s has two prefix lengths", addr, rest[:i])
				}
				addr, rest = addr[:len(addr)-1]+rest[:i]+"]", rest[i:]
			}
		} else {
			i := strings.IndexByte(rest, ':')
			if i < 0 {
				return nil, fmt.Errorf("want <address|*>:<ports|*>")
			}
			addr, rest = rest[:i], rest[i:]
		}
		if inner := strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"); strings.ContainsAny(inner, "[]") {
			return nil, fmt.Errorf("address %q: misplaced bracket", addr)
		}
		if !strings.HasPrefix(rest, ":") {
			return nil, fmt.Errorf("want <address|*>:<ports|*> (an IPv6 address goes in brackets: [::1]:80)")
		}
		ports, after, more := strings.Cut(rest[1:], ":")
		out = append(out, [2]string{addr, ports})
		if !more {
			return out, nil
		}
		if len(out) == 2 {
			return nil, fmt.Errorf("more than two <address>:<ports> (an IPv6 address goes in brackets: [::1]:80)")
		}
		rest = after
	}
}

// parseEndpoint parses "<address[/prefix]|[ipv6[/prefix]]|*>" and "<port[-port]|*>".
func parseEndpoint(addr, ports string) (Endpoint, error) {
	var e Endpoint
	if v6, ok := strings.CutPrefix(addr, "["); ok {
		v6 = strings.TrimSuffix(v6, "]")
		a, bitsText, hasBits := strings.Cut(v6, "/")
		bits := 128
		if hasBits {
			n, ok := parseDecimal(bitsText, 128)
			if !ok {
				return e, fmt.Errorf("address %q: prefix length must be a number 0-128", addr)
			}
			bits = n
		}
		ip, err := netip.ParseAddr(a)
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return e, fmt.Errorf("address %q: want an IPv6 address in brackets, [x::y] or [x::y/n] (no zone)", addr)
		}
		// As for IPv4, host bits beyond the prefix are ignored.
		e.Prefix = netip.PrefixFrom(ip, bits).Masked()
	} else if addr != "*" {
		a, bits := addr, 32
		if i := strings.IndexByte(addr, '/'); i >= 0 {
			a = addr[:i]
			n, ok := parseDecimal(addr[i+1:], 32)
			if !ok {
				return e, fmt.Errorf("address %q: prefix length must be a number 0-32", addr)
			}
			bits = n
		}
		ip, ok := parseIPv4(a)
		if !ok {
			return e, fmt.Errorf("address %q: want an IPv4 address a.b.c.d (each 0-255), optionally /prefix, or *", addr)
		}
		// Like VMA, host bits beyond the prefix are ignored: 1.1.1.5/24
		// means 1.1.1.0/24.
		e.Prefix = netip.PrefixFrom(ip, bits).Masked()
		e.mask = prefixMask(bits)
		b := ip.As4()
		e.net = (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) & e.mask
	}
	if ports == "*" {
		e.AnyPort, e.PortLo, e.PortHi = true, 0, 65535
		return e, nil
	}
	lo, hi := ports, ports
	if i := strings.IndexByte(ports, '-'); i >= 0 {
		lo, hi = ports[:i], ports[i+1:]
	}
	l, ok1 := parseDecimal(lo, 65535)
	h, ok2 := parseDecimal(hi, 65535)
	if !ok1 || !ok2 {
		return e, fmt.Errorf("ports %q: want a port 0-65535, a range <port>-<port>, or *", ports)
	}
	if l > h {
		return e, fmt.Errorf("ports %q: range start is above its end", ports)
	}
	e.PortLo, e.PortHi = uint16(l), uint16(h)
	return e, nil
}

func prefixMask(bits int) uint32 {
	if bits == 0 {
		return 0
	}
	return ^uint32(0) << (32 - bits)
}

// parseDecimal parses a number the way VMA's scanner reads INT tokens
// ("0" or a digit string without a leading zero) and checks it against max.
func parseDecimal(s string, max int) (int, bool) {
	if s == "" || len(s) > 6 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n <= max
}

// parseIPv4 parses a dotted quad of decimal numbers 0-255 without leading zeros.
func parseIPv4(s string) (netip.Addr, bool) {
	var b [4]byte
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	for i, q := range parts {
		n, ok := parseDecimal(q, 255)
		if !ok {
			return netip.Addr{}, false
		}
		b[i] = byte(n)
	}
	return netip.AddrFrom4(b), true
}

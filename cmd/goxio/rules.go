package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/goxio/goxio/conf"
)

func rulesCmd(args []string, stdout, stderr io.Writer, environ []string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage: goxio rules check [FILE]\n       goxio rules match --app NAME [--id ID] ROLE ADDR:PORT[:ADDR:PORT] [FILE]\n")
		return 2
	}
	switch args[0] {
	case "check":
		return rulesCheck(args[1:], stdout, stderr, environ)
	case "match":
		return rulesMatch(args[1:], stdout, stderr, environ)
	}
	fmt.Fprintf(stderr, "goxio: rules: unknown command %q: want check or match\n", args[0])
	return 2
}

// defaultRulesFile is the rule file the library would read in this
// environment: GOXIO_CONFIG_FILE, VMA_CONFIG_FILE, the parameters file, or
// /etc/libvma.conf.
func defaultRulesFile(environ []string) string {
	p, _ := conf.Load(environ)
	return p.ConfigFile
}

// rulesCheck implements `goxio rules check [FILE]`.
func rulesCheck(args []string, stdout, stderr io.Writer, environ []string) int {
	if len(args) > 1 {
		fmt.Fprintln(stderr, "usage: goxio rules check [FILE]")
		return 2
	}
	file := defaultRulesFile(environ)
	if len(args) == 1 {
		file = args[0]
	}
	rs, errs := conf.LoadRules(file)
	for _, err := range errs {
		var re *conf.RuleError
		if errors.As(err, &re) {
			fmt.Fprintln(stderr, err)
		} else {
			fmt.Fprintf(stderr, "goxio: %v\n", err)
		}
	}
	for _, err := range rs.Lint() {
		var re *conf.RuleError
		if errors.As(err, &re) {
			fmt.Fprintf(stderr, "%s:%d: warning: %s\n", re.File, re.Line, re.Msg)
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(stderr, "%s: %d bad line(s); goxio skips them and applies the rest\n", file, len(errs))
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok, %s, %s\n", file, plural(len(rs.Sections), "section"), plural(rs.NumRules(), "rule"))
	for _, s := range rs.Sections {
		var counts []string
		for r := conf.Role(0); r <= conf.RoleUDPConnect; r++ {
			if n := len(s.RoleRules(r)); n > 0 {
				counts = append(counts, fmt.Sprintf("%s %d", r, n))
			}
		}
		where := "before any application-id line"
		if s.Line > 0 {
			where = "line " + strconv.Itoa(s.Line)
		}
		summary := "no rules: everything offloaded"
		if len(counts) > 0 {
			summary = strings.Join(counts, ", ")
		}
		fmt.Fprintf(stdout, "  %s (%s): %s\n", s, where, summary)
	}
	return 0
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// rulesMatch implements `goxio rules match`.
func rulesMatch(args []string, stdout, stderr io.Writer, environ []string) int {
	fs := flag.NewFlagSet("goxio rules match", flag.ContinueOnError)
	fs.SetOutput(stderr)
	app := fs.String("app", "", "program name, as argv[0] (required)")
	id := fs.String("id", "", "application id (default: $GOXIO_APPLICATION_ID or $VMA_APPLICATION_ID, else none)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: goxio rules match --app NAME [--id ID] ROLE ADDR:PORT[:ADDR:PORT] [FILE]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *app == "" || fs.NArg() < 2 || fs.NArg() > 3 {
		fs.Usage()
		return 2
	}
	role, err := conf.ParseRole(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "goxio: rules match: %v\n", err)
		return 2
	}
	eps, err := parseTuple(fs.Arg(1))
	if err != nil || len(eps) > 2 || (len(eps) == 2 && !role.TwoAddresses()) {
		if err == nil {
			err = fmt.Errorf("%s takes one ADDR:PORT", role)
			if role.TwoAddresses() {
				err = fmt.Errorf("%s takes the remote ADDR:PORT and optionally the local one", role)
			}
		}
		fmt.Fprintf(stderr, "goxio: rules match: %q: %v\n", fs.Arg(1), err)
		return 2
	}
	var local, remote netip.AddrPort
	switch role {
	case conf.RoleTCPServer, conf.RoleUDPReceiver:
		local = eps[0]
	case conf.RoleUDPSender:
		remote = eps[0]
	default:
		remote = eps[0]
		if len(eps) == 2 {
			local = eps[1]
		}
	}
	appID := *id
	idSet := false
	fs.Visit(func(f *flag.Flag) { idSet = idSet || f.Name == "id" })
	if !idSet {
		p, _ := conf.Load(environ)
		appID = p.AppID
	}
	file := defaultRulesFile(environ)
	if fs.NArg() == 3 {
		file = fs.Arg(2)
	}
	rs, errs := conf.LoadRules(file)
	for _, err := range errs {
		fmt.Fprintf(stderr, "goxio: %v\n", err)
	}
	d := rs.Match(*app, appID, role, local, remote)
	shownID := appID
	if shownID == "" {
		shownID = "(none)"
	}
	fmt.Fprintf(stdout, "program: %s, application id: %s, %s", *app, shownID, role)
	if local.IsValid() {
		fmt.Fprintf(stdout, ", local %s", local)
	}
	if remote.IsValid() {
		fmt.Fprintf(stdout, ", remote %s", remote)
	}
	fmt.Fprintln(stdout)
	if d.Section != nil {
		fmt.Fprintf(stdout, "section: %s `%s`\n", d.Section.Where(), d.Section)
	} else {
		fmt.Fprintf(stdout, "section: none in %s applies to this program and id\n", file)
	}
	if d.Rule != nil {
		fmt.Fprintf(stdout, "rule:    %s `%s`\n", d.Rule.Where(), d.Rule.Text)
	} else {
		fmt.Fprintln(stdout, "rule:    no rule matched")
	}
	fmt.Fprintf(stdout, "result:  %s\n", d.Target)
	return 0
}

// parseTuple parses "ADDR:PORT" or "ADDR:PORT:ADDR:PORT"; IPv6 addresses are
// written in brackets.
func parseTuple(s string) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	rest := s
	for {
		var host string
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, errors.New("missing ]")
			}
			host, rest = rest[1:end], rest[end+1:]
		} else {
			i := strings.IndexByte(rest, ':')
			if i < 0 {
				return nil, errors.New("want ADDR:PORT")
			}
			host, rest = rest[:i], rest[i:]
		}
		if !strings.HasPrefix(rest, ":") {
			return nil, errors.New("want ADDR:PORT")
		}
		portStr, after, more := strings.Cut(rest[1:], ":")
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return nil, fmt.Errorf("address %q: %w", host, err)
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q: want 0-65535", portStr)
		}
		out = append(out, netip.AddrPortFrom(addr, uint16(port)))
		if !more {
			return out, nil
		}
		rest = after
	}
}

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/goxio/goxio/conf"
)

// paramsCmd implements `goxio params [--env]`: every parameter with its
// value in this environment (and GOXIO_PARAMS_FILE), where the value comes
// from, the default, the valid values and a description; with --env only the
// non-default ones, as NAME=VALUE lines a shell can read. Parameter warnings
// go to stderr and make the exit status 1.
func paramsCmd(args []string, stdout, stderr io.Writer, environ []string) int {
	fs := flag.NewFlagSet("goxio params", flag.ContinueOnError)
	fs.SetOutput(stderr)
	envOnly := fs.Bool("env", false, "print only the parameters that differ from the default, as NAME=VALUE")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: goxio params [--env]")
		return 2
	}
	p, warns := conf.Load(environ)
	for _, w := range warns {
		fmt.Fprintf(stderr, "goxio: warning: %s\n", w)
	}
	if *envOnly {
		for _, s := range p.NonDefault() {
			fmt.Fprintf(stdout, "%s=%s # %s\n", s.Name, shellQuote(s.Value), s.Source)
		}
	} else {
		infos := conf.ParamInfos()
		for i, s := range p.All() {
			info := infos[i]
			origin := "default"
			if s.Source != "default" {
				origin = s.Source + "; default " + shellQuote(info.Default)
			}
			fmt.Fprintf(stdout, "%s = %s  [%s; values %s]\n    %s\n",
				s.Name, shellQuote(s.Value), origin, info.Values, info.Description)
		}
	}
	if len(warns) > 0 {
		return 1
	}
	return 0
}

// shellQuote quotes s for a POSIX shell when it is empty or has characters
// the shell would interpret.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./,:+%@=", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

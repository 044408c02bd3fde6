package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/goxio/goxio/conf"
)

// The markers around the generated part of a page, as whole lines.
const (
	beginMarker = `.\" BEGIN GENERATED PARAMETERS (packaging/mangen; do not edit by hand)`
	endMarker   = `.\" END GENERATED PARAMETERS`
)

// errNoMarkers is returned for a page without the two marker lines in order.
var errNoMarkers = errors.New("page lacks the generated-parameters markers")

// regenerate returns page with the text between the markers replaced by the
// current parameter documentation.
func regenerate(page []byte) ([]byte, error) {
	begin := bytes.Index(page, []byte(beginMarker+"\n"))
	end := bytes.Index(page, []byte(endMarker+"\n"))
	if begin < 0 || end < begin {
		return nil, errNoMarkers
	}
	var b bytes.Buffer
	b.Write(page[:begin+len(beginMarker)+1])
	b.WriteString(paramsRoff())
	b.Write(page[end:])
	return b.Bytes(), nil
}

// paramsRoff documents every parameter and every VMA_SPEC profile in roff.
func paramsRoff() string {
	var b strings.Builder
	for _, p := range conf.ParamInfos() {
		def := p.Default
		if def == "" {
			def = "empty"
		}
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n.br\nValues: %s.\nDefault: %s.\n",
			text(p.Name), text(p.Description), text(p.Values), text(def))
	}
	b.WriteString(".SS VMA_SPEC profiles\n")
	b.WriteString("A profile changes the defaults of the parameters it lists;\n")
	b.WriteString("any parameter set in the environment or the parameters file still wins.\n")
	for _, name := range conf.SpecNames() {
		settings := conf.SpecSettings(name)
		fmt.Fprintf(&b, ".TP\n.B %s\n", text(name))
		if len(settings) == 0 {
			b.WriteString("VMA's defaults, unchanged.\n")
			continue
		}
		parts := make([]string, len(settings))
		for i, s := range settings {
			parts[i] = s.Name + "=" + s.Value
		}
		b.WriteString(text(strings.Join(parts, ", ")) + "\n")
	}
	return b.String()
}

// text escapes s for use as roff text: backslashes and hyphens (which roff
// would otherwise render as typographic hyphens, breaking copy and paste of
// values such as -1), and a control character at the start of the line.
func text(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

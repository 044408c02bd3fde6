package conf

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// A parameters file (GOXIO_PARAMS_FILE) is TOML with one top-level key per
// parameter, spelled as its variable:
//
//	VMA_RX_POLL = -1
//	GOXIO_TRACELEVEL = "debug"
//	VMA_TCP_NODELAY = true
//
// Numbers, booleans and strings are accepted; a string is read exactly like
// the environment variable would be. When both spellings of a parameter are
// in the file, the GOXIO_ one wins.

// assignment is one value for one parameter from one source.
type assignment struct {
	idx    int
	value  string
	source string // for Setting.Source: "file x.toml", "env VMA_RX_POLL"
	where  string // for Warning.Source: "x.toml:3", "env VMA_RX_POLL"
	goxio  bool   // spelled GOXIO_: wins over the VMA_ spelling from the same source
}

// readParamsFile reads the TOML parameters file at path and returns its
// assignments in the order they apply.
func readParamsFile(path string) ([]assignment, []Warning) {
	data, err := readConfigFile(path)
	if errors.Is(err, errNotRegular) {
		err = &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if err != nil {
		return nil, []Warning{{Source: "env GOXIO_PARAMS_FILE", Msg: fmt.Sprintf("read parameters file: %v; file ignored", err)}}
	}
	return parseParamsFile(path, string(data))
}

// parseParamsFile parses the text of a parameters file named path.
func parseParamsFile(path, text string) ([]assignment, []Warning) {
	var m map[string]any
	md, err := toml.Decode(text, &m)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, []Warning{{Source: path + ":" + strconv.Itoa(pe.Position.Line), Msg: pe.Message + "; file ignored"}}
		}
		return nil, []Warning{{Source: path, Msg: err.Error() + "; file ignored"}}
	}
	lines := strings.Split(text, "\n")
	var out []assignment
	var warns []Warning
	for _, k := range md.Keys() {
		if len(k) != 1 {
			continue // inside a table, reported with the table
		}
		name := k[0]
		where := path
		if n := keyLine(lines, name); n > 0 {
			where += ":" + strconv.Itoa(n)
		}
		warn := func(msg string) { warns = append(warns, Warning{Source: where, Msg: msg}) }
		if _, ok := m[name].(map[string]any); ok {
			warn(fmt.Sprintf("%s is a table; write parameters as NAME = value at the top of the file; ignored", name))
			continue
		}
		idx, ok := lookupParam(name)
		if !ok {
			warn(fmt.Sprintf("unknown parameter %q; ignored", name))
			continue
		}
		var v string
		switch x := m[name].(type) {
		case string:
			v = x
		case int64:
			v = strconv.FormatInt(x, 10)
		case bool:
			v = strconv.FormatBool(x)
		case float64:
			v = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			warn(fmt.Sprintf("%s: want a number, a boolean or a string, not %s; ignored", name, md.Type(name)))
			continue
		}
		out = append(out, assignment{idx: idx, value: v, source: "file " + path, where: where, goxio: strings.HasPrefix(name, "GOXIO_")})
	}
	// VMA_ spellings first, so that GOXIO_ ones win; file order otherwise.
	sort.SliceStable(out, func(i, j int) bool { return !out[i].goxio && out[j].goxio })
	return out, warns
}

// keyLine returns the 1-based line where the top-level key or table name is
// defined, or 0 when it cannot be found.
func keyLine(lines []string, key string) int {
	for i, l := range lines {
		l = strings.TrimLeft(l, " \t")
		if rest, ok := strings.CutPrefix(l, "[["); ok {
			l = rest
		} else if rest, ok := strings.CutPrefix(l, "["); ok {
			l = rest
		}
		l = strings.TrimLeft(l, " \t")
		for _, form := range []string{key, `"` + key + `"`, "'" + key + "'"} {
			if rest, ok := strings.CutPrefix(l, form); ok {
				rest = strings.TrimLeft(rest, " \t")
				if rest != "" && strings.IndexByte("=.]", rest[0]) >= 0 {
					return i + 1
				}
			}
		}
	}
	return 0
}

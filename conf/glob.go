package conf

// glob is a compiled shell pattern with the semantics of glibc's
// fnmatch(pattern, name, 0), which VMA uses to match application-id program
// names: '*' matches any run of bytes (including '/' and a leading '.'), '?'
// any one byte, "[...]" one byte of a set ("[!...]" or "[^...]" negated,
// ranges "a-z", classes "[:digit:]"), '\' escapes the next byte. A '[' without
// a closing ']' is an ordinary byte; a pattern ending in a lone '\' matches
// nothing (fnmatch reports it as an error). Matching works on bytes and never
// allocates.
type glob struct {
	elems []globElem
	any   bool // the pattern is "*" (or only stars): matches everything
	none  bool // the pattern ends in a lone '\': fnmatch rejects it, nothing matches
}

type globKind uint8

const (
	globByte globKind = iota // one given byte
	globOne                  // '?': any byte
	globStar                 // '*': any run of bytes
	globSet                  // "[...]": a byte of the set
)

type globElem struct {
	kind globKind
	b    byte
	set  *[4]uint64 // for globSet, bit i set when byte i is a member
}

// compileGlob compiles a pattern; every pattern is valid.
func compileGlob(p string) glob {
	var g glob
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '*':
			if n := len(g.elems); n == 0 || g.elems[n-1].kind != globStar {
				g.elems = append(g.elems, globElem{kind: globStar})
			}
			i++
		case '?':
			g.elems = append(g.elems, globElem{kind: globOne})
			i++
		case '\\':
			if i+1 < len(p) {
				g.elems = append(g.elems, globElem{kind: globByte, b: p[i+1]})
				i += 2
			} else {
				g.none = true
				i++
			}
		case '[':
			if set, n := parseGlobSet(p[i:]); n > 0 {
				g.elems = append(g.elems, globElem{kind: globSet, set: set})
				i += n
			} else {
				g.elems = append(g.elems, globElem{kind: globByte, b: c})
				i++
			}
		default:
			g.elems = append(g.elems, globElem{kind: globByte, b: c})
			i++
		}
	}
	g.any = !g.none && len(g.elems) == 1 && g.elems[0].kind == globStar
	return g
}

// globClasses are the POSIX character classes of the C locale.
var globClasses = map[string]func(c byte) bool{
	"alnum":  func(c byte) bool { return isAlpha(c) || isDigit(c) },
	"alpha":  isAlpha,
	"blank":  func(c byte) bool { return c == ' ' || c == '\t' },
	"cntrl":  func(c byte) bool { return c < 0x20 || c == 0x7f },
	"digit":  isDigit,
	"graph":  func(c byte) bool { return c > 0x20 && c < 0x7f },
	"lower":  func(c byte) bool { return c >= 'a' && c <= 'z' },
	"print":  func(c byte) bool { return c >= 0x20 && c < 0x7f },
	"punct":  func(c byte) bool { return c > 0x20 && c < 0x7f && !isAlpha(c) && !isDigit(c) },
	"space":  func(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') },
	"upper":  func(c byte) bool { return c >= 'A' && c <= 'Z' },
	"xdigit": func(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') },
}

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseGlobSet parses a bracket expression at the start of p (p[0] == '[').
// It returns the set and the number of bytes consumed, or 0 when the bracket
// is not closed (then '[' is an ordinary byte).
func parseGlobSet(p string) (*[4]uint64, int) {
	var set [4]uint64
	add := func(c byte) { set[c>>6] |= 1 << (c & 63) }
	i := 1
	negate := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		negate = true
		i++
	}
	first := true
	for {
		if i >= len(p) {
			return nil, 0
		}
		c := p[i]
		if c == ']' && !first {
			i++
			break
		}
		first = false
		if c == '[' && i+1 < len(p) && p[i+1] == ':' {
			if end := indexFrom(p, i+2, ":]"); end >= 0 {
				if fn, ok := globClasses[p[i+2:end]]; ok {
					for b := 0; b < 256; b++ {
						if fn(byte(b)) {
							add(byte(b))
						}
					}
					i = end + 2
					continue
				}
			}
		}
		lo, n := setByte(p, i)
		if n == 0 {
			return nil, 0
		}
		i += n
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			hi, m := setByte(p, i+1)
			if m == 0 {
				return nil, 0
			}
			i += 1 + m
			for b := int(lo); b <= int(hi); b++ {
				add(byte(b))
			}
			continue
		}
		add(lo)
	}
	if negate {
		for k := range set {
			set[k] = ^set[k]
		}
	}
	return &set, i
}

// setByte reads one possibly escaped byte of a bracket expression.
func setByte(p string, i int) (byte, int) {
	if p[i] == '\\' {
		if i+1 < len(p) {
			return p[i+1], 2
		}
		return 0, 0
	}
	return p[i], 1
}

func indexFrom(s string, from int, sub string) int {
	for i := from; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func (e *globElem) matchByte(c byte) bool {
	switch e.kind {
	case globByte:
		return c == e.b
	case globOne:
		return true
	case globSet:
		return e.set[c>>6]&(1<<(c&63)) != 0
	}
	return false
}

// match reports whether name matches the whole pattern.
func (g *glob) match(name string) bool {
	if g.none {
		return false
	}
	if g.any {
		return true
	}
	el := g.elems
	pi, ni := 0, 0
	starP, starN := -1, 0 // last star seen and the name position it resumes from
	for ni < len(name) {
		if pi < len(el) {
			e := &el[pi]
			if e.kind == globStar {
				starP, starN = pi, ni
				pi++
				continue
			}
			if e.matchByte(name[ni]) {
				pi++
				ni++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		// Let the last star swallow one more byte and retry.
		starN++
		pi, ni = starP+1, starN
	}
	for pi < len(el) && el[pi].kind == globStar {
		pi++
	}
	return pi == len(el)
}

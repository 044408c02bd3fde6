package conf

import (
	"fmt"
	"strconv"
	"strings"
)

// valueError is a parameter value that cannot be used.
type valueError struct {
	value string
	want  string
}

func (e *valueError) Error() string { return fmt.Sprintf("%q: %s", e.value, e.want) }

// parseInt parses a decimal integer (surrounding white space allowed) and
// checks it is within [min, max]. VMA reads numbers with atoi, which turns
// garbage into 0; goxio rejects it instead.
func parseInt(v string, min, max int) (int, error) {
	s := strings.TrimSpace(v)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, &valueError{v, fmt.Sprintf("want an integer %d..%d", min, max)}
	}
	if n < int64(min) || n > int64(max) {
		return 0, &valueError{v, fmt.Sprintf("out of range %d..%d", min, max)}
	}
	return int(n), nil
}

// parseBool parses a boolean: an integer (0 false, anything else true, as
// VMA's atoi-based parsing) or true/false, yes/no, on/off, enable(d)/
// disable(d) in any case.
func parseBool(v string) (bool, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	switch s {
	case "true", "yes", "on", "enable", "enabled":
		return true, nil
	case "false", "no", "off", "disable", "disabled":
		return false, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n != 0, nil
	}
	return false, &valueError{v, "want 0 or 1 (or true/false, yes/no, on/off)"}
}

// maxCPUs is the largest CPU number + 1 a CPU set may name (glibc's CPU_SETSIZE).
const maxCPUs = 1024

func checkCPUSet(v string) error {
	_, err := ParseCPUSet(v)
	return err
}

// ParseCPUSet parses a VMA_INTERNAL_THREAD_AFFINITY value: "-1" (no
// affinity: returns nil), a hexadecimal mask "0x..." (bit n is CPU n), or a
// list of CPUs and ranges "0,2,4-7". CPUs are 0-1023; the set must not be
// empty. The CPUs are returned in increasing order.
func ParseCPUSet(v string) ([]int, error) {
	s := strings.TrimSpace(v)
	if s == "-1" {
		return nil, nil
	}
	var set [maxCPUs]bool
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		hex := s[2:]
		for i := 0; i < len(hex); i++ {
			d, err := strconv.ParseUint(hex[len(hex)-1-i:len(hex)-i], 16, 8)
			if err != nil {
				return nil, &valueError{v, "bad hexadecimal CPU mask"}
			}
			for b := 0; b < 4; b++ {
				if d&(1<<b) == 0 {
					continue
				}
				cpu := i*4 + b
				if cpu >= maxCPUs {
					return nil, &valueError{v, fmt.Sprintf("CPU mask names a CPU above %d", maxCPUs-1)}
				}
				set[cpu] = true
			}
		}
	} else {
		for _, item := range strings.Split(s, ",") {
			lo, hi, isRange := strings.Cut(item, "-")
			a, err1 := parseInt(lo, 0, maxCPUs-1)
			b := a
			var err2 error
			if isRange {
				b, err2 = parseInt(hi, 0, maxCPUs-1)
			}
			if err1 != nil || err2 != nil || b < a {
				return nil, &valueError{v, fmt.Sprintf("want -1, 0x<hex mask> or a CPU list like 0,2-3 (CPUs 0-%d)", maxCPUs-1)}
			}
			for c := a; c <= b; c++ {
				set[c] = true
			}
		}
	}
	var cpus []int
	for c, ok := range set {
		if ok {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, &valueError{v, "the CPU set is empty"}
	}
	return cpus, nil
}

// checkOneOf accepts exactly the words given.
func checkOneOf(words ...string) func(string) error {
	return func(v string) error {
		for _, w := range words {
			if v == w {
				return nil
			}
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = strconv.Quote(w)
		}
		return &valueError{v, "want one of " + strings.Join(quoted, ", ")}
	}
}

// checkDir accepts an absolute path.
func checkDir(v string) error {
	if !strings.HasPrefix(v, "/") {
		return &valueError{v, "want an absolute directory path"}
	}
	return nil
}

// checkInterfaces accepts "", "all" or a comma-separated list of interface names (at least
// one; each 1-15 bytes without '/', white space or ':', as the kernel allows).
func checkInterfaces(v string) error {
	if v == "" || v == "all" {
		return nil
	}
	n := 0
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if len(name) > 15 || strings.ContainsAny(name, "/: \t") {
			return &valueError{v, "want interface names (at most 15 bytes, no '/', ':' or spaces) separated by commas, or all"}
		}
		n++
	}
	if n == 0 {
		return &valueError{v, "names no interface; want if1,if2 or all"}
	}
	return nil
}

package conf

import (
	"fmt"
	"strings"
)

// spec is a VMA_SPEC profile: the parameters it changes, applied above the
// defaults and below every explicit setting. The values are VMA's (its
// sys_vars.cpp); parameters goxio does not have are left out.
type spec struct {
	name    string   // canonical name, as VMA_SPEC accepts it
	aliases []string // other accepted spellings (VMA's numbers)
	set     [][2]string
}

var specs = []spec{
	{name: "none", aliases: []string{"0"}},
	{name: "ultra-latency", aliases: []string{"10"}, set: [][2]string{
		{"VMA_TX_BUFS", "512"}, {"VMA_TX_WRE", "256"}, {"VMA_RX_BUFS", "1024"}, {"VMA_RX_WRE", "256"},
		{"VMA_RX_POLL", "-1"}, {"VMA_RX_UDP_POLL_OS_RATIO", "0"},
		{"VMA_SELECT_POLL", "-1"}, {"VMA_SELECT_POLL_OS_RATIO", "0"}, {"VMA_SELECT_SKIP_OS", "0"},
		{"VMA_AVOID_SYS_CALLS_ON_TCP_FD", "1"}, {"VMA_PROGRESS_ENGINE_INTERVAL", "0"},
		{"VMA_THREAD_MODE", "0"}, {"VMA_MEM_ALLOC_TYPE", "2"}, {"VMA_TCP_NODELAY", "1"},
		{"VMA_INTERNAL_THREAD_AFFINITY", "0"},
	}},
	{name: "latency", aliases: []string{"15"}, set: [][2]string{
		{"VMA_TX_WRE", "256"}, {"VMA_RX_WRE", "256"}, {"VMA_RX_POLL", "-1"}, {"VMA_SELECT_POLL", "-1"},
		{"VMA_AVOID_SYS_CALLS_ON_TCP_FD", "1"}, {"VMA_THREAD_MODE", "0"}, {"VMA_MEM_ALLOC_TYPE", "2"},
		{"VMA_INTERNAL_THREAD_AFFINITY", "0"}, {"VMA_PROGRESS_ENGINE_INTERVAL", "100"},
		{"VMA_SELECT_POLL_OS_RATIO", "1"}, {"VMA_SELECT_SKIP_OS", "1"}, {"VMA_TCP_NODELAY", "1"},
	}},
	{name: "multi_ring_latency", set: [][2]string{
		{"VMA_MEM_ALLOC_TYPE", "2"}, {"VMA_SELECT_POLL", "-1"}, {"VMA_RX_POLL", "-1"},
		{"VMA_RING_ALLOCATION_LOGIC_TX", "20"}, {"VMA_RING_ALLOCATION_LOGIC_RX", "20"},
		{"VMA_SELECT_POLL_OS_RATIO", "0"}, {"VMA_SELECT_SKIP_OS", "0"}, {"VMA_RX_POLL_ON_TX_TCP", "1"},
	}},
	{name: "29west", aliases: []string{"29"}, set: [][2]string{
		{"VMA_RX_POLL", "0"}, {"VMA_RX_UDP_POLL_OS_RATIO", "100"}, {"VMA_SELECT_POLL", "100000"},
		{"VMA_SELECT_POLL_OS_RATIO", "100"}, {"VMA_SELECT_SKIP_OS", "50"},
	}},
	{name: "wombat_fh", aliases: []string{"554"}, set: [][2]string{
		{"VMA_RX_POLL", "0"}, {"VMA_RX_UDP_POLL_OS_RATIO", "100"}, {"VMA_SELECT_POLL", "0"}, {"VMA_SELECT_SKIP_OS", "20"},
	}},
	{name: "mcd", aliases: []string{"623"}, set: [][2]string{
		{"VMA_RING_ALLOCATION_LOGIC_RX", "31"}, {"VMA_RING_ALLOCATION_LOGIC_TX", "31"},
	}},
	{name: "mcd-irq", aliases: []string{"624"}, set: [][2]string{
		{"VMA_RING_ALLOCATION_LOGIC_RX", "31"}, {"VMA_RING_ALLOCATION_LOGIC_TX", "31"},
		{"VMA_SELECT_POLL", "0"}, {"VMA_RX_POLL", "0"},
	}},
	{name: "rti", aliases: []string{"784"}, set: [][2]string{{"VMA_RX_POLL", "-1"}}},
	{name: "7750", set: [][2]string{
		{"VMA_TX_BUFS", "8192"}, {"VMA_RX_BUFS", "204800"}, {"VMA_TRACELEVEL", "warn"}, {"VMA_STATS_FD_NUM", "1024"},
		{"VMA_INTERNAL_THREAD_AFFINITY", "0x3"}, {"VMA_RX_POLL", "-1"}, {"VMA_SELECT_POLL", "-1"},
		{"VMA_SELECT_POLL_OS_RATIO", "0"}, {"VMA_AVOID_SYS_CALLS_ON_TCP_FD", "1"},
	}},
}

// SpecNames lists the VMA_SPEC profiles by canonical name.
func SpecNames() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

// ParseSpec parses a VMA_SPEC value (a profile name or VMA's number for it,
// any case) and returns the canonical name.
func ParseSpec(v string) (string, error) {
	s := findSpec(v)
	if s == nil {
		return "", fmt.Errorf("parse VMA_SPEC %q: want one of %s", v, strings.Join(SpecNames(), ", "))
	}
	return s.name, nil
}

// SpecSettings returns the parameters a profile changes, as NAME=value
// settings in VMA's names, for documentation; nil for an unknown profile.
func SpecSettings(v string) []Setting {
	s := findSpec(v)
	if s == nil {
		return nil
	}
	out := make([]Setting, len(s.set))
	for i, kv := range s.set {
		out[i] = Setting{Name: kv[0], Value: kv[1], Source: "spec " + s.name}
	}
	return out
}

func findSpec(v string) *spec {
	v = strings.TrimSpace(v)
	for i := range specs {
		if strings.EqualFold(v, specs[i].name) {
			return &specs[i]
		}
		for _, a := range specs[i].aliases {
			if v == a {
				return &specs[i]
			}
		}
	}
	return nil
}

package xdp

import (
	"net/netip"
	"testing"
)

// TestRecipientsFamilies: which socket the demultiplexer hands a unicast datagram to, by the
// kernel's rules for AF_INET and AF_INET6 sockets: an AF_INET6 socket bound to :: takes IPv6
// and, without IPV6_V6ONLY, IPv4; one bound to a v4-mapped address takes that IPv4 address
// only; an AF_INET socket is preferred to an AF_INET6 one for IPv4, a specific address to a
// wildcard, a connected socket (to a v4-mapped peer too) to both.
func TestRecipientsFamilies(t *testing.T) {
	ap := netip.MustParseAddrPort
	socks := map[string]*binding{
		"v4 any":          {local: ap("0.0.0.0:53")},
		"v4 specific":     {local: ap("10.0.0.1:53")},
		"v6 any":          {local: ap("[::]:53"), v6: true},
		"v6only any":      {local: ap("[::]:53"), v6: true, v6only: true},
		"v6 mapped":       {local: ap("[::ffff:10.0.0.1]:53"), v6: true},
		"v6 mapped any":   {local: ap("[::ffff:0.0.0.0]:53"), v6: true},
		"v6 specific":     {local: ap("[fd00::1]:53"), v6: true},
		"v6 to mapped":    {local: ap("[::]:53"), peer: ap("[::ffff:10.0.0.9]:700"), v6: true},
		"v6 to v6 peer":   {local: ap("[::]:53"), peer: ap("[fd00::9]:700"), v6: true},
		"v4 other port 1": {local: ap("0.0.0.0:54")},
	}
	cases := []struct {
		socks    []string
		dst, src string
		want     string
	}{
		{[]string{"v6 any"}, "10.0.0.1:53", "10.0.0.9:1", "v6 any"},
		{[]string{"v6 any"}, "[fd00::1]:53", "[fd00::9]:1", "v6 any"},
		{[]string{"v6only any"}, "10.0.0.1:53", "10.0.0.9:1", "none"},
		{[]string{"v6only any"}, "[fd00::1]:53", "[fd00::9]:1", "v6only any"},
		{[]string{"v4 any"}, "[fd00::1]:53", "[fd00::9]:1", "none"},
		{[]string{"v6 mapped"}, "10.0.0.1:53", "10.0.0.9:1", "v6 mapped"},
		{[]string{"v6 mapped"}, "10.0.0.2:53", "10.0.0.9:1", "none"},
		{[]string{"v6 mapped"}, "[fd00::1]:53", "[fd00::9]:1", "none"},
		{[]string{"v6 mapped any"}, "10.0.0.2:53", "10.0.0.9:1", "v6 mapped any"},
		{[]string{"v6 specific"}, "[fd00::1]:53", "[fd00::9]:1", "v6 specific"},
		{[]string{"v6 specific"}, "[fd00::2]:53", "[fd00::9]:1", "none"},
		{[]string{"v6 specific"}, "10.0.0.1:53", "10.0.0.9:1", "none"},
		{[]string{"v6 any", "v4 any"}, "10.0.0.1:53", "10.0.0.9:1", "v4 any"},
		{[]string{"v4 any", "v6 any"}, "10.0.0.1:53", "10.0.0.9:1", "v4 any"},
		{[]string{"v4 any", "v6 mapped"}, "10.0.0.1:53", "10.0.0.9:1", "v6 mapped"},
		{[]string{"v4 specific", "v6 mapped"}, "10.0.0.1:53", "10.0.0.9:1", "v4 specific"},
		{[]string{"v4 any", "v6 any"}, "[fd00::1]:53", "[fd00::9]:1", "v6 any"},
		{[]string{"v6 specific", "v6 any"}, "[fd00::1]:53", "[fd00::9]:1", "v6 specific"},
		{[]string{"v4 specific", "v6 to mapped"}, "10.0.0.1:53", "10.0.0.9:700", "v6 to mapped"},
		{[]string{"v4 specific", "v6 to mapped"}, "10.0.0.1:53", "10.0.0.9:701", "v4 specific"},
		{[]string{"v6 specific", "v6 to v6 peer"}, "[fd00::1]:53", "[fd00::9]:700", "v6 to v6 peer"},
		{[]string{"v6 to v6 peer"}, "10.0.0.1:53", "10.0.0.9:700", "none"},
	}
	for _, c := range cases {
		var ms []member
		names := map[*UDP]string{}
		for _, n := range c.socks {
			u := &UDP{}
			names[u] = n
			ms = append(ms, member{u: u, b: socks[n]})
		}
		var arr [maxFanout]*UDP
		out := recipients(ms, ap(c.dst), ap(c.src), arr[:0])
		got := "none"
		if len(out) == 1 {
			got = names[out[0]]
		} else if len(out) > 1 {
			t.Errorf("%v %s from %s: %d recipients of a unicast datagram", c.socks, c.dst, c.src, len(out))
			continue
		}
		if got != c.want {
			t.Errorf("%v: %s from %s went to %s, want %s", c.socks, c.dst, c.src, got, c.want)
		}
	}
}

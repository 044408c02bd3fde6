package xdp

import (
	"net/netip"
	"testing"
)

// TestWireAddrs: the family and addresses a datagram of an AF_INET or AF_INET6 socket goes out
// with, or why the kernel sends it: v4-mapped destinations as IPv4 (the local address unmapped),
// what the kernel refuses (v6only to a mapped address, an IPv6 local address to a mapped one, a
// mapped local address to IPv6), a link-local destination without a scope id, IPV6_FLOWINFO_SEND.
func TestWireAddrs(t *testing.T) {
	ap := netip.MustParseAddrPort
	cases := []struct {
		name           string
		v6only, flow   bool
		dst, local     string
		scope          uint32
		wantDst, wantL string
		why            KernelWhy
	}{
		{"IPv4 socket", false, false, "10.0.0.2:53", "0.0.0.0:700", 0, "10.0.0.2:53", "0.0.0.0:700", whyNone},
		{"IPv6", false, false, "[fd00::2]:53", "[::]:700", 0, "[fd00::2]:53", "[::]:700", whyNone},
		{"IPv6 from a specific address", false, false, "[fd00::2]:53", "[fd00::1]:700", 0, "[fd00::2]:53", "[fd00::1]:700", whyNone},
		{"mapped from ::", false, false, "[::ffff:10.0.0.2]:53", "[::]:700", 0, "10.0.0.2:53", "0.0.0.0:700", whyNone},
		{"mapped from a mapped address", false, false, "[::ffff:10.0.0.2]:53", "[::ffff:10.0.0.1]:700", 0, "10.0.0.2:53", "10.0.0.1:700", whyNone},
		{"mapped from ::ffff:0.0.0.0", false, false, "[::ffff:10.0.0.2]:53", "[::ffff:0.0.0.0]:700", 0, "10.0.0.2:53", "0.0.0.0:700", whyNone},
		{"mapped from a v6only socket", true, false, "[::ffff:10.0.0.2]:53", "[::]:700", 0, "", "", WhyUnsupported},
		{"mapped from an IPv6 address", false, false, "[::ffff:10.0.0.2]:53", "[fd00::1]:700", 0, "", "", WhyUnsupported},
		{"IPv6 from a mapped address", false, false, "[fd00::2]:53", "[::ffff:10.0.0.1]:700", 0, "", "", WhyUnsupported},
		{"link-local without scope", false, false, "[fe80::2]:53", "[::]:700", 0, "", "", WhyLinkLocal},
		{"link-local with scope", false, false, "[fe80::2]:53", "[::]:700", 3, "[fe80::2]:53", "[::]:700", whyNone},
		{"flow labels of the program's", false, true, "[fd00::2]:53", "[::]:700", 0, "", "", WhyFlowLabel},
	}
	for _, c := range cases {
		u := &UDP{}
		u.v6.Store(true)
		u.v6only.Store(c.v6only)
		u.sndFlow.Store(c.flow)
		d, l, why := u.wireAddrs(ap(c.dst), ap(c.local), c.scope)
		if why != c.why {
			t.Errorf("%s: reason %d, want %d", c.name, why, c.why)
			continue
		}
		if why == whyNone && (d != ap(c.wantDst) || l != ap(c.wantL)) {
			t.Errorf("%s: %v from %v, want %s from %s", c.name, d, l, c.wantDst, c.wantL)
		}
	}
}

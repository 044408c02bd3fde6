package xdp

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestSteeringProgram runs the steering program on crafted frames (BPF_PROG_TEST_RUN):
// the verifier accepts it, steered flows and groups are counted and go to the socket
// map (with no socket there: XDP_PASS), and everything else passes untouched.
func TestSteeringProgram(t *testing.T) {
	p, err := load(0, 0, 1)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer p.Close()
	if p.ID() == 0 {
		t.Errorf("program id 0")
	}
	flow := netip.MustParseAddrPort("10.1.2.3:4000")
	group := netip.MustParseAddr("239.1.1.1")
	anyGroup := netip.MustParseAddr("239.2.2.2")
	if err := p.AddFlow(flow); err != nil {
		t.Fatal(err)
	}
	if err := p.AddFlow(flow); err != nil {
		t.Fatalf("adding a flow twice: %v", err)
	}
	if err := p.AddGroup(group, 5000); err != nil {
		t.Fatal(err)
	}
	if err := p.AddGroup(anyGroup, 0); err != nil {
		t.Fatal(err)
	}
	if err := p.AddGroup(netip.MustParseAddr("10.0.0.1"), 1); err == nil {
		t.Errorf("AddGroup accepted a unicast address")
	}
	flow6 := netip.MustParseAddrPort("[fd00::1:2]:4000")
	if err := p.AddFlow(flow6); err != nil {
		t.Fatal(err)
	}
	if err := p.AddFlow(netip.MustParseAddrPort("[::ffff:10.1.2.3]:1")); err == nil {
		t.Errorf("AddFlow accepted an IPv4-mapped address")
	}
	src6 := netip.MustParseAddrPort("[fd00::9]:1234")
	src := netip.MustParseAddrPort("10.9.9.9:1234")
	base := frameSpec{dstMAC: [6]byte{2, 0, 0, 0, 0, 1}, srcMAC: [6]byte{2, 0, 0, 0, 0, 2}, src: src, dst: flow, payload: []byte("hello")}
	with := func(f func(*frameSpec)) []byte { s := base; f(&s); return udpFrame(s) }
	ipv6 := udpFrame(base)
	ipv6[12], ipv6[13] = 0x86, 0xdd
	arp := udpFrame(base)[:42]
	arp[12], arp[13] = 0x08, 0x06
	badVersion := udpFrame(base)
	badVersion[14] = 0x65
	cases := []struct {
		name  string
		frame []byte
		hit   *uint64
	}{
		{"flow", udpFrame(base), new(uint64)},
		{"flow with IP options", with(func(s *frameSpec) { s.ipOptions = 10 }), new(uint64)},
		{"flow behind VLAN tag", with(func(s *frameSpec) { s.vlan = 7 }), new(uint64)},
		{"flow, empty payload", with(func(s *frameSpec) { s.payload = nil }), new(uint64)},
		{"group on its port", with(func(s *frameSpec) { s.dst = netip.AddrPortFrom(group, 5000) }), new(uint64)},
		{"group on any port", with(func(s *frameSpec) { s.dst = netip.AddrPortFrom(anyGroup, 9) }), new(uint64)},
		{"other port", with(func(s *frameSpec) { s.dst = netip.AddrPortFrom(flow.Addr(), 4001) }), nil},
		{"other address", with(func(s *frameSpec) { s.dst = netip.MustParseAddrPort("10.1.2.4:4000") }), nil},
		{"group on another port", with(func(s *frameSpec) { s.dst = netip.AddrPortFrom(group, 5001) }), nil},
		{"unknown group", with(func(s *frameSpec) { s.dst = netip.MustParseAddrPort("239.1.1.2:5000") }), nil},
		{"TCP", with(func(s *frameSpec) { s.proto = 6 }), nil},
		{"ICMP", with(func(s *frameSpec) { s.proto = 1 }), nil},
		{"first fragment", with(func(s *frameSpec) { s.moreFragments = true }), nil},
		{"later fragment", with(func(s *frameSpec) { s.fragOffset = 100 }), nil},
		{"IPv4 flow in an IPv6 EtherType", ipv6, nil},
		{"flow IPv6", with(func(s *frameSpec) { s.src, s.dst = src6, flow6 }), new(uint64)},
		{"flow IPv6 behind VLAN tag", with(func(s *frameSpec) { s.src, s.dst, s.vlan = src6, flow6, 9 }), new(uint64)},
		{"IPv6 other port", with(func(s *frameSpec) { s.src, s.dst = src6, netip.AddrPortFrom(flow6.Addr(), 4001) }), nil},
		{"IPv6 other address", with(func(s *frameSpec) { s.src, s.dst = src6, netip.MustParseAddrPort("[fd00::1:3]:4000") }), nil},
		{"IPv6 fragment header", with(func(s *frameSpec) { s.src, s.dst, s.proto = src6, flow6, 44 }), nil},
		{"IPv6 hop-by-hop options", with(func(s *frameSpec) { s.src, s.dst, s.proto = src6, flow6, 255 }), nil},
		{"ICMPv6", with(func(s *frameSpec) { s.src, s.dst, s.proto = src6, flow6, 58 }), nil},
		{"IPv6 truncated UDP header", with(func(s *frameSpec) { s.src, s.dst = src6, flow6 })[:14+40+6], nil},
		{"ARP", arp, nil},
		{"IPv4 version 6", badVersion, nil},
		{"truncated UDP header", udpFrame(base)[:14+20+6], nil},
		{"truncated UDP header behind options", with(func(s *frameSpec) { s.ipOptions = 10; s.payload = nil })[:14+60+4], nil},
		{"truncated IPv4 header", udpFrame(base)[:14+19], nil},
		{"truncated VLAN tag", with(func(s *frameSpec) { s.vlan = 7 })[:16], nil},
		{"Ethernet header only", udpFrame(base)[:14], nil},
	}
	dup, err := unix.Dup(p.prog.FD())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := ebpf.NewProgramFromFD(dup)
	if err != nil {
		t.Fatalf("program from fd: %v", err)
	}
	defer prog.Close()
	var flowHits, flow6Hits uint64
	for _, c := range cases {
		ret, err := prog.Run(&ebpf.RunOptions{Data: c.frame})
		if err != nil {
			t.Fatalf("%s: run: %v", c.name, err)
		}
		if ret != xdpPass {
			t.Errorf("%s: returned %d, want XDP_PASS (%d): no socket is registered", c.name, ret, xdpPass)
		}
		if c.hit != nil && strings.HasPrefix(c.name, "flow IPv6") {
			flow6Hits++
		} else if c.hit != nil && strings.HasPrefix(c.name, "flow") {
			flowHits++
		}
	}
	if got, err := p.FlowHits(flow); err != nil || got != flowHits {
		t.Errorf("FlowHits = %d, %v; want %d", got, err, flowHits)
	}
	if got, err := p.FlowHits(flow6); err != nil || got != flow6Hits || flow6Hits != 2 {
		t.Errorf("FlowHits(IPv6) = %d, %v; want %d (2)", got, err, flow6Hits)
	}
	if err := p.RemoveFlow(flow6); err != nil {
		t.Fatal(err)
	}
	if _, err := p.FlowHits(flow6); err == nil {
		t.Errorf("FlowHits of a removed IPv6 flow succeeded")
	}
	if got, err := p.GroupHits(group, 5000); err != nil || got != 1 {
		t.Errorf("GroupHits(group, 5000) = %d, %v; want 1", got, err)
	}
	if got, err := p.GroupHits(anyGroup, 0); err != nil || got != 1 {
		t.Errorf("GroupHits(anyGroup, 0) = %d, %v; want 1", got, err)
	}
	if err := p.RemoveFlow(flow); err != nil {
		t.Fatal(err)
	}
	if err := p.RemoveFlow(flow); err != nil {
		t.Errorf("removing a missing flow: %v", err)
	}
	if _, err := p.FlowHits(flow); err == nil {
		t.Errorf("FlowHits of a removed flow succeeded")
	}
	if err := p.RemoveGroup(group, 5000); err != nil {
		t.Fatal(err)
	}
	if _, err := p.GroupHits(group, 5000); err == nil {
		t.Errorf("GroupHits of a removed group succeeded")
	}
}

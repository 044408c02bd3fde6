package xdp

import (
	"encoding/binary"
	"hash/maphash"
	"net/netip"

	"golang.org/x/sys/unix"
)

// What an AF_INET6 socket's IPv6 datagrams get from its options, as the kernel gives them.

// ipv6FlowInfoSend is IPV6_FLOWINFO_SEND of linux/in6.h, which golang.org/x/sys/unix does not define.
const ipv6FlowInfoSend = 33

// Kernel values (include/net/ipv6.h).
const (
	autoFlowLabelsForced   = 3       // net.ipv6.auto_flowlabels: labels even with IPV6_AUTOFLOWLABEL off
	flowLabelStatelessFlag = 0x80000 // IPV6_FLOWLABEL_STATELESS_FLAG (net.ipv6.flowlabel_state_ranges)
)

// readIPv6Options reads the IPv6 options of an AF_INET6 socket (and learns that it is one).
func (u *UDP) readIPv6Options(fd int) {
	if u.domain(fd) != unix.AF_INET6 {
		return
	}
	u.v6.Store(true)
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY); err == nil {
		u.v6only.Store(v != 0)
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS); err == nil {
		u.tclass.Store(uint32(v))
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS); err == nil {
		u.hops.Store(int32(v))
	}
	auto := procInt("/proc/sys/net/ipv6/auto_flowlabels", 1) == autoFlowLabelsForced
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_AUTOFLOWLABEL); err == nil && v != 0 {
		auto = true
	}
	u.autoLabel.Store(auto)
	u.stateless.Store(procInt("/proc/sys/net/ipv6/flowlabel_state_ranges", 0) == 1)
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, ipv6FlowInfoSend); err == nil {
		u.sndFlow.Store(v != 0)
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_IF); err == nil && v >= 0 {
		u.ucastIf.Store(uint32(v))
	}
}

// hopLimitOf is the hop limit of the socket's next IPv6 datagram on r, ok false when it cannot
// be told. getsockopt(IPV6_UNICAST_HOPS) reads the value the program set, or when it set none
// (or -1) a default: net.ipv6.conf.all.hop_limit, or a connected socket's route's; the kernel
// sends the route's hop limit (its metric, else the interface's hop_limit) when none is set.
// The value read is the program's when it is neither; when it is the route's the datagram gets
// that either way; when it is only the all-interfaces default (the interface's hop_limit differs
// from it), a program that set exactly that value cannot be told from one that set none (the
// option may have been set before the engine was there): such a socket's datagrams go through
// the kernel.
func (u *UDP) hopLimitOf(r *route) (int, bool) {
	v := int(u.hops.Load())
	if v == r.hops || v < 0 {
		return r.hops, true
	}
	if v == r.allHops {
		return 0, false
	}
	return v, true
}

// flowSeed keys the flow labels of this process (the kernel keys its flow hash with a boot-time
// random seed: labels are stable per flow and unpredictable to a peer).
var flowSeed = maphash.MakeSeed()

// flowLabel is the label the kernel's ip6_make_flowlabel gives a datagram of the flow (src, dst
// addresses and ports) when automatic labels are on (0 when off): a hash of the flow, 20 bits,
// with the stateless flag when net.ipv6.flowlabel_state_ranges is set.
func (u *UDP) flowLabel(src, dst netip.Addr, sport, dport uint16) uint32 {
	if !u.autoLabel.Load() {
		return 0
	}
	var b [36]byte
	s, d := src.As16(), dst.As16()
	copy(b[:16], s[:])
	copy(b[16:32], d[:])
	binary.BigEndian.PutUint16(b[32:], sport)
	binary.BigEndian.PutUint16(b[34:], dport)
	h := maphash.Bytes(flowSeed, b[:])
	l := uint32(h^h>>32) & 0xfffff
	if u.stateless.Load() {
		l |= flowLabelStatelessFlag
	}
	return l
}
